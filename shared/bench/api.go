package bench

import (
	"encoding/json"
	"time"
)

// The bench, history and profile routes answer the original module's
// shapes (its protocol.ts: BenchJob, BenchHistoryEntry, BenchProfile and
// their wrappers {jobs}, {runs}, {profiles}), field for field and type for
// type, with this module's additions beside them; docs/api.md lists both.
// Job and HistoryEntry stay this module's own records (job.json, the
// history's values); JobView and RunView are how the API shows them, and
// clients turn them back with Job and Entry.

// TimeText is an instant as the original writes its times: ISO 8601 in UTC
// with milliseconds and Z, as JavaScript's toISOString does.
func TimeText(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// timeOrNull is TimeText, or null for an instant not reached (0).
func timeOrNull(ms int64) *string {
	if ms == 0 {
		return nil
	}
	s := TimeText(ms)
	return &s
}

func msOrNull(ms int64) *int64 {
	if ms == 0 {
		return nil
	}
	return &ms
}

func textOrNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func orZero[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// JobView is a job as the API shows it.
type JobView struct {
	// The original's BenchJob, in its order.
	ID string `json:"id"`
	// Status is the original's: queued, running, done or failed. A
	// cancelled job is failed there, and here too; Cancelled tells it.
	Status   JobStatus `json:"status"`
	Progress float64   `json:"progress"`
	Message  *string   `json:"message"`
	Error    *string   `json:"error"`
	// StartedAt is when the job was submitted (the original's row was
	// made then, before it waits for the GPU); EndedAt when it ended.
	StartedAt string  `json:"startedAt"`
	EndedAt   *string `json:"endedAt"`

	// Additions.
	Cancelled bool   `json:"cancelled"`
	Kind      string `json:"kind"`
	Profile   string `json:"profile"`
	// Position is the place in the GPU queue while queued (1 = next).
	Position int `json:"position,omitempty"`
	// StartedAtMs and EndedAtMs are StartedAt and EndedAt in Unix
	// milliseconds; RunStartedAtMs is when the runner started (it held
	// the GPU from then), absent while queued.
	StartedAtMs    int64    `json:"startedAtMs"`
	RunStartedAtMs int64    `json:"runStartedAtMs,omitempty"`
	EndedAtMs      *int64   `json:"endedAtMs"`
	Stage          string   `json:"stage,omitempty"`
	ExitCode       *int     `json:"exitCode,omitempty"`
	RunID          string   `json:"runId,omitempty"`
	Problems       []string `json:"problems,omitempty"`
	LogTail        []string `json:"logTail,omitempty"`
}

// JobCancelledError is a cancelled job's error in the API, where it has
// none of its own: the original's word for it.
const JobCancelledError = "job cancelled"

// View is j as the API shows it.
func (j Job) View() JobView {
	v := JobView{
		ID: j.ID, Status: j.Status, Progress: j.Progress,
		Message: textOrNull(j.Message), Error: textOrNull(j.Error),
		StartedAt: TimeText(j.CreatedAt), EndedAt: timeOrNull(j.FinishedAt),
		Kind: j.Kind, Profile: j.Profile, Position: j.Position,
		StartedAtMs: j.CreatedAt, RunStartedAtMs: j.StartedAt, EndedAtMs: msOrNull(j.FinishedAt),
		Stage: j.Stage, ExitCode: j.ExitCode, RunID: j.RunID, Problems: j.Problems, LogTail: j.LogTail,
	}
	if j.Status == StatusCancelled {
		v.Status, v.Cancelled = StatusFailed, true
		if v.Error == nil {
			v.Error = textOrNull(JobCancelledError)
		}
	}
	return v
}

// Job is the job v shows, as View took it.
func (v JobView) Job() Job {
	j := Job{
		ID: v.ID, Kind: v.Kind, Profile: v.Profile, Status: v.Status, Position: v.Position,
		CreatedAt: v.StartedAtMs, StartedAt: v.RunStartedAtMs, FinishedAt: orZero(v.EndedAtMs),
		Progress: v.Progress, Stage: v.Stage, Message: orZero(v.Message), Error: orZero(v.Error),
		ExitCode: v.ExitCode, RunID: v.RunID, Problems: v.Problems, LogTail: v.LogTail,
	}
	if v.Cancelled {
		j.Status = StatusCancelled
		if j.Error == JobCancelledError {
			j.Error = ""
		}
	}
	return j
}

// MarshalJSON writes the list as the API shows it: {jobs: [JobView…], lease}.
func (l JobList) MarshalJSON() ([]byte, error) {
	views := make([]JobView, len(l.Jobs))
	for i, j := range l.Jobs {
		views[i] = j.View()
	}
	return json.Marshal(struct {
		Jobs  []JobView `json:"jobs"`
		Lease Lease     `json:"lease"`
	}{views, l.Lease})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (l *JobList) UnmarshalJSON(b []byte) error {
	var w struct {
		Jobs  []JobView `json:"jobs"`
		Lease Lease     `json:"lease"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	l.Jobs, l.Lease = make([]Job, len(w.Jobs)), w.Lease
	for i, v := range w.Jobs {
		l.Jobs[i] = v.Job()
	}
	return nil
}

// RunView is a history entry as the API shows it: the original's
// BenchHistoryEntry, whose times are ISO text, with their Unix
// milliseconds beside them.
type RunView struct {
	ID           string        `json:"id"`
	Profile      string        `json:"profile"`
	Scope        string        `json:"scope"`
	StartedAt    string        `json:"startedAt"`
	FinishedAt   *string       `json:"finishedAt"`
	DurationMs   int64         `json:"durationMs"`
	Complete     bool          `json:"complete"`
	ExitCode     int           `json:"exitCode"`
	Problems     []string      `json:"problems"`
	Machine      *Machine      `json:"machine"` // null when the run recorded none, as the original
	RunDirectory string        `json:"runDirectory"`
	Cells        []CompactCell `json:"cells"`

	// Additions.
	StartedAtMs  int64  `json:"startedAtMs"`
	FinishedAtMs *int64 `json:"finishedAtMs"`
	// Source names the tool that measured an imported run.
	Source *Source `json:"source,omitempty"`
}

// View is e as the API shows it.
func (e HistoryEntry) View() RunView {
	v := RunView{
		ID: e.ID, Profile: e.Profile, Scope: e.Scope,
		StartedAt: TimeText(e.StartedAt), FinishedAt: timeOrNull(e.FinishedAt),
		DurationMs: e.DurationMs, Complete: e.Complete, ExitCode: e.ExitCode,
		Problems: e.Problems, RunDirectory: e.RunDirectory, Cells: e.Cells,
		StartedAtMs: e.StartedAt, FinishedAtMs: msOrNull(e.FinishedAt), Source: e.Source,
	}
	if e.Machine != (Machine{}) {
		m := e.Machine
		v.Machine = &m
	}
	if v.Problems == nil {
		v.Problems = []string{}
	}
	if v.Cells == nil {
		v.Cells = []CompactCell{}
	}
	return v
}

// Entry is the entry v shows.
func (v RunView) Entry() HistoryEntry {
	return HistoryEntry{
		ID: v.ID, Profile: v.Profile, Scope: v.Scope,
		StartedAt: v.StartedAtMs, FinishedAt: orZero(v.FinishedAtMs),
		DurationMs: v.DurationMs, Complete: v.Complete, ExitCode: v.ExitCode,
		Problems: v.Problems, Machine: orZero(v.Machine), RunDirectory: v.RunDirectory, Cells: v.Cells,
		Source: v.Source,
	}
}

// historyListWire is GET /history's body: {runs, problems, truncated},
// each run a RunView or, from EncodedHistoryList, one already encoded.
type historyListWire[R any] struct {
	Runs      []R              `json:"runs"`
	Problems  []HistoryProblem `json:"problems"`
	Truncated bool             `json:"truncated,omitempty"`
}

func newHistoryListWire[R any](runs []R, problems []HistoryProblem, truncated bool) historyListWire[R] {
	if problems == nil {
		problems = []HistoryProblem{}
	}
	return historyListWire[R]{runs, problems, truncated}
}

// MarshalJSON writes the list as the API shows it: {runs: [RunView…],
// problems}.
func (l HistoryList) MarshalJSON() ([]byte, error) {
	runs := make([]RunView, len(l.Entries))
	for i, e := range l.Entries {
		runs[i] = e.View()
	}
	return json.Marshal(newHistoryListWire(runs, l.Problems, l.Truncated))
}

// EncodedHistoryList is a HistoryList of runs each already encoded as a
// RunView (a server measuring its answer's size encodes each run once),
// for json.Marshal: the same body as HistoryList's.
func EncodedHistoryList(runs []json.RawMessage, problems []HistoryProblem, truncated bool) any {
	if runs == nil {
		runs = []json.RawMessage{}
	}
	return newHistoryListWire(runs, problems, truncated)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (l *HistoryList) UnmarshalJSON(b []byte) error {
	var w historyListWire[RunView]
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	l.Entries, l.Problems, l.Truncated = make([]HistoryEntry, len(w.Runs)), w.Problems, w.Truncated
	for i, v := range w.Runs {
		l.Entries[i] = v.Entry()
	}
	return nil
}

// MarshalJSON writes scope null when the plan declares none or does not
// load, as the original's BenchProfile (scope: string | null).
func (p Profile) MarshalJSON() ([]byte, error) {
	type plain Profile // without this method
	return json.Marshal(struct {
		plain
		Scope *string `json:"scope"`
	}{plain(p), textOrNull(p.Scope)})
}

// ProfileList is GET /bench/profiles' body, as the original's {profiles}.
type ProfileList struct {
	Profiles []Profile `json:"profiles"`
}
