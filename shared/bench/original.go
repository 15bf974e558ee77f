package bench

import (
	"errors"
	"fmt"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/strictjson"
)

// The original TypeScript module kept one JSON file per finished run in
// <home>/metrics/history/ (its bench.ts: <id>.json, a BenchHistoryEntry of
// its protocol.ts): times as ISO text, machine null when unknown, and each
// tree cell named by its tree (baseline or candidate) beside its
// configuration. OriginalEntry is that shape; Entry makes this module's
// history entry of it.
type OriginalEntry struct {
	ID           string         `json:"id"`
	Profile      string         `json:"profile"`
	Scope        string         `json:"scope"`
	StartedAt    string         `json:"startedAt"`
	FinishedAt   *string        `json:"finishedAt"`
	DurationMs   int64          `json:"durationMs"`
	Complete     bool           `json:"complete"`
	ExitCode     int            `json:"exitCode"`
	Problems     []string       `json:"problems"`
	Machine      *Machine       `json:"machine"`
	RunDirectory string         `json:"runDirectory"`
	Cells        []OriginalCell `json:"cells"`
}

// OriginalCell is the original's BenchCell: CompactCell's figures, with
// the tree or reference that ran it.
type OriginalCell struct {
	CompactCell
	Tree      string `json:"tree,omitempty"`
	Reference string `json:"reference,omitempty"`
}

// DecodeOriginalEntry reads one of the original's history files into this
// module's entry, held to HistoryEntry.Check as an imported run is. Errors
// quote no unbounded input.
func DecodeOriginalEntry(data []byte, now time.Time) (HistoryEntry, error) {
	var o OriginalEntry
	if err := strictjson.Decode(data, &o, false); errors.Is(err, strictjson.ErrTrailing) {
		return HistoryEntry{}, errors.New("not one JSON object: something follows it")
	} else if err != nil {
		return HistoryEntry{}, fmt.Errorf("not the original's history entry: %.200s", err)
	}
	if o.ID == "" {
		return HistoryEntry{}, errors.New("no id (is it one of the original's history entries?)")
	}
	e, err := o.Entry()
	if err != nil {
		return HistoryEntry{}, err
	}
	if err := e.Check(now); err != nil {
		return HistoryEntry{}, err
	}
	return e, nil
}

// Entry is o as this module keeps it. A tree cell's configuration gains
// its tree ("default/candidate", as the cell's key says it), since both
// trees ran each configuration; a reference cell's is its reference.
func (o OriginalEntry) Entry() (HistoryEntry, error) {
	started, err := isoMillis(o.StartedAt)
	if err != nil {
		return HistoryEntry{}, fmt.Errorf("startedAt: %w", err)
	}
	// The original always wrote finishedAt; null would mean unknown, and
	// its duration then says when it ended.
	finished := started + o.DurationMs
	if o.FinishedAt != nil {
		if finished, err = isoMillis(*o.FinishedAt); err != nil {
			return HistoryEntry{}, fmt.Errorf("finishedAt: %w", err)
		}
	}
	e := HistoryEntry{
		ID: o.ID, Profile: o.Profile, Scope: o.Scope, StartedAt: started, FinishedAt: finished,
		DurationMs: o.DurationMs, Complete: o.Complete, ExitCode: o.ExitCode, Problems: o.Problems,
		RunDirectory: o.RunDirectory, Cells: make([]CompactCell, len(o.Cells)),
	}
	if o.Machine != nil {
		e.Machine = *o.Machine
	}
	for i, c := range o.Cells {
		cell := c.CompactCell
		switch {
		case c.Tree != "" && cell.Configuration != "":
			cell.Configuration += "/" + c.Tree
		case c.Tree != "":
			cell.Configuration = c.Tree
		case c.Reference != "" && cell.Configuration == "":
			cell.Configuration = c.Reference
		}
		e.Cells[i] = cell
	}
	return e, nil
}

// isoMillis reads the original's times: JavaScript's toISOString.
func isoMillis(s string) (int64, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("%.40q is not an ISO 8601 time", s)
	}
	return t.UnixMilli(), nil
}
