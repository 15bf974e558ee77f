package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// putJob writes a job's directory and job.json as a backend would have
// left them (plainly: the tests and the benchmark write many).
func putJob(tb testing.TB, runs, id string, dj diskJob) {
	tb.Helper()
	dir := filepath.Join(runs, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	dj.ID, dj.RunID = id, id
	if dj.Kind == "" {
		dj.Kind = bench.JobKind
	}
	data, err := json.Marshal(dj)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, jobFile), data, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// logRecorder keeps what the service logs.
type logRecorder struct {
	t     *testing.T
	mu    sync.Mutex
	lines []string
}

// logger is the service's logger, recording its lines.
func (l *logRecorder) logger() *slog.Logger {
	return logging.Func(func(_ slog.Level, msg string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, msg)
		l.t.Log(msg)
	})
}

func (l *logRecorder) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

func diskStatus(t *testing.T, runs, id string) bench.JobStatus {
	t.Helper()
	var dj diskJob
	if err := readJSON(filepath.Join(runs, id, jobFile), &dj); err != nil {
		t.Fatal(err)
	}
	return dj.Status
}

// openIDs is what the index (the ids file) has open, read back to its
// newest checkpoint, which it must have.
func openIDs(t *testing.T, runs string) []string {
	t.Helper()
	var l runList
	if err := l.open(runs); err != nil {
		t.Fatal(err)
	}
	ids, found, err := l.openIDs()
	if err != nil || !found {
		t.Fatalf("index: open %q, checkpoint found %v, %v", ids, found, err)
	}
	return ids
}

// TestRecoverReadsOpenJobs: a start of a home from before the ids file's
// checkpoints reads the jobs its open index (.open.json) names and no
// other; without one (a home from before it), or with one that cannot be
// trusted, it reads them all, as before. Either way it writes the ids
// file's first checkpoint and removes .open.json, and later starts read
// the ids file alone.
func TestRecoverReadsOpenJobs(t *testing.T) {
	const (
		running = "20261201T100000Z-aaaaaa" // its runner is long gone
		queued  = "20261201T100001Z-bbbbbb"
		corrupt = "20261201T100002Z-cccccc"
		done    = "20261201T100003Z-dddddd"
	)
	tests := []struct {
		name      string
		index     string // "" for none
		recovered []string
		logs      []string
		notLogs   []string
	}{
		{"index", `{"open":["` + running + `"]}`, []string{running}, nil, []string{corrupt}},
		{"no index", "", []string{running, queued}, []string{"skip", corrupt}, []string{openIndexFile, "file00"}},
		{"index names final and gone jobs", `{"open":["` + done + `","` + running + `","20261201T000000Z-gone00"]}`,
			[]string{running}, nil, []string{corrupt}},
		{"index torn", `{"open":["` + running, []string{running, queued}, []string{"does not decode", "reading every job"}, nil},
		{"index names a path", `{"open":["../` + running + `"]}`, []string{running, queued}, []string{"not a run id"}, nil},
		{"index without its list", `{}`, []string{running, queued}, []string{"no open list"}, nil},
		{"index too large", `{"open":[` + strings.Repeat(" ", maxOpenIndexSize) + `]}`, []string{running, queued}, []string{"is over"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs := t.TempDir()
			putJob(t, runs, running, diskJob{Job: bench.Job{Status: bench.StatusRunning, CreatedAt: 1},
				Runner: &runnerProc{Pid: 1 << 22, Pgid: 1 << 22, Start: "1"}})
			putJob(t, runs, queued, diskJob{Job: bench.Job{Status: bench.StatusQueued, CreatedAt: 2}})
			os.MkdirAll(filepath.Join(runs, corrupt), 0o755)
			os.WriteFile(filepath.Join(runs, corrupt, jobFile), []byte(`{"id":`), 0o644)
			os.WriteFile(filepath.Join(runs, "20261201T100004Z-file00"), nil, 0o644) // not a run: no word
			putJob(t, runs, done, diskJob{Job: bench.Job{Status: bench.StatusDone, CreatedAt: 3}})
			if tt.index != "" {
				os.WriteFile(filepath.Join(runs, openIndexFile), []byte(tt.index), 0o644)
			}
			logs := &logRecorder{t: t}
			h := newHarnessLog(t, runs, 0, logs.logger())

			for _, id := range []string{running, queued} {
				want := bench.StatusRunning
				if id == queued {
					want = bench.StatusQueued
				}
				if slices.Contains(tt.recovered, id) {
					want = bench.StatusFailed
				}
				if got := diskStatus(t, runs, id); got != want {
					t.Errorf("%s on disk: %s, want %s", id, got, want)
				}
			}
			for _, s := range tt.logs {
				if !logs.has(s) {
					t.Errorf("log lacks %q: %q", s, logs.lines)
				}
			}
			for _, s := range tt.notLogs {
				if logs.has(s) {
					t.Errorf("log has %q: %q", s, logs.lines)
				}
			}
			if open := openIDs(t, runs); len(open) != 0 {
				t.Errorf("open index after recovery = %q", open)
			}
			if _, err := os.Stat(filepath.Join(runs, openIndexFile)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s after the first start: %v", openIndexFile, err)
			}
			// Every job reads as recovery leaves it, read at start or not.
			var got []string
			for _, j := range h.svc.List(Filter{}) {
				if j.ID != done && (j.Status != bench.StatusFailed || !strings.HasPrefix(j.Error, "the backend stopped")) {
					t.Errorf("%s = %+v", j.ID, j)
				}
				got = append(got, j.ID)
			}
			if want := []string{done, queued, running}; !slices.Equal(got, want) {
				t.Errorf("list = %q, want %q", got, want)
			}
			if _, err := h.svc.Get(corrupt); !errors.Is(err, ErrNotFound) {
				t.Errorf("corrupt job: %v", err)
			}
			if slices.Contains(tt.recovered, queued) {
				return
			}
			// The job the index missed went into it when it was read, and
			// the next start recovers it.
			if open := openIDs(t, runs); !slices.Equal(open, []string{queued}) {
				t.Errorf("open index after reading the stray = %q", open)
			}
			newHarnessLog(t, runs, 0, logs.logger())
			if got := diskStatus(t, runs, queued); got != bench.StatusFailed {
				t.Errorf("stray after the next start: %s", got)
			}
			if open := openIDs(t, runs); len(open) != 0 {
				t.Errorf("open index after the next start = %q", open)
			}
		})
	}
}

// TestOpenIndexFollowsJobs: a job is in the open index from its submit to
// its final job.json.
func TestOpenIndexFollowsJobs(t *testing.T) {
	tests := []struct {
		script string
		cancel bool
		status bench.JobStatus
	}{
		{"ok", false, bench.StatusDone},
		{"block", true, bench.StatusCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			h := newHarness(t, t.TempDir(), 0)
			j := h.submit(tt.script)
			if tt.cancel {
				h.waitEvent(j.ID, cellStarted)
				if open := openIDs(t, h.dir); !slices.Equal(open, []string{j.ID}) {
					t.Fatalf("open index while it runs = %q", open)
				}
				h.svc.Cancel(j.ID)
				<-h.clock.Armed
			}
			if j = h.done(j.ID); j.Status != tt.status {
				t.Fatalf("job = %+v", j)
			}
			if open := openIDs(t, h.dir); len(open) != 0 {
				t.Fatalf("open index after the end = %q", open)
			}
			if got := diskStatus(t, h.dir, j.ID); got != tt.status {
				t.Fatalf("job.json says %s", got)
			}
		})
	}
}

// TestOpenIndexFullDisk: a submit whose index entry cannot be written fails
// and leaves nothing; a job whose removal cannot be written still ends, and
// the next start reads it once and leaves it as it was.
func TestOpenIndexFullDisk(t *testing.T) {
	tests := []struct {
		name string
		fail func(line string) bool // the index's line that cannot be written
	}{
		{"at submit", func(line string) bool { return validID(line) }},
		{"at the end", func(line string) bool { return line == "[]" || strings.HasPrefix(line, "-") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs := t.TempDir()
			h := newHarness(t, runs, 0)
			var mu sync.Mutex
			full := true
			h.svc.runs.failWrite = func(line string) error {
				mu.Lock()
				defer mu.Unlock()
				if full && tt.fail(line) {
					return &fs.PathError{Op: "write", Path: filepath.Join(runs, idsFile), Err: syscall.ENOSPC}
				}
				return nil
			}
			j, err := h.svc.Submit("p-ok", plan("ok", 2))
			if tt.name == "at submit" {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("submit = %+v, %v", j, err)
				}
				// The index, and no run directory.
				if entries, _ := os.ReadDir(runs); len(entries) != 1 || len(h.svc.List(Filter{})) != 0 || h.lease.State().Held {
					t.Fatalf("left behind: %v, lease %+v", entries, h.lease.State())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			j = h.done(j.ID)
			if j.Status != bench.StatusDone {
				t.Fatalf("job = %+v", j)
			}
			if open := openIDs(t, runs); !slices.Equal(open, []string{j.ID}) {
				t.Fatalf("open index = %q, want the stale entry", open)
			}
			mu.Lock()
			full = false
			mu.Unlock()
			if err := h.svc.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			after := newHarness(t, runs, 0)
			if got, _ := after.svc.Get(j.ID); got.Status != bench.StatusDone || got.Message != j.Message {
				t.Fatalf("after restart = %+v, want %+v", got, j)
			}
			if open := openIDs(t, runs); len(open) != 0 {
				t.Fatalf("open index after restart = %q", open)
			}
		})
	}
}

// TestListReadsNewestFirst: List walks the runs newest first, reading
// final jobs from disk through a bounded cache, skipping what is not a job,
// and a filter reads on until its limit is filled.
func TestListReadsNewestFirst(t *testing.T) {
	runs := t.TempDir()
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	const n = 300
	var all, failed []string // newest first
	for i := range n {
		id := bench.NewRunID(base.Add(time.Duration(i)*time.Minute), fmt.Sprintf("%06x", i))
		status := bench.StatusDone
		if i%7 == 0 {
			status = bench.StatusFailed
			failed = append([]string{id}, failed...)
		}
		putJob(t, runs, id, diskJob{Job: bench.Job{Status: status, CreatedAt: int64(i)}})
		all = append([]string{id}, all...)
	}
	// Not jobs: a run of `bench run` on its own, a damaged job.json, a
	// link out of the runs directory, a hidden directory.
	os.MkdirAll(filepath.Join(runs, "20261201T010000Z-cli000"), 0o755)
	os.MkdirAll(filepath.Join(runs, "20261201T020000Z-torn00"), 0o755)
	os.WriteFile(filepath.Join(runs, "20261201T020000Z-torn00", jobFile), []byte("{"), 0o644)
	outside := t.TempDir()
	putJob(t, outside, "20261201T030000Z-link00", diskJob{Job: bench.Job{Status: bench.StatusDone}})
	os.Symlink(filepath.Join(outside, "20261201T030000Z-link00"), filepath.Join(runs, "20261201T030000Z-link00"))
	putJob(t, runs, ".hidden", diskJob{Job: bench.Job{Status: bench.StatusDone}})
	os.WriteFile(filepath.Join(runs, "20261201T040000Z-file00"), []byte("{}"), 0o644)

	h := newHarness(t, runs, 0)
	const cacheSize = 64 // fewer than the jobs, so the walks evict
	h.svc.final = newFinalCache(cacheSize)
	live := h.submit("block") // newest: the fake clock is past them all
	h.waitEvent(live.ID, cellStarted)

	tests := []struct {
		f    Filter
		want []string
	}{
		{Filter{Limit: 3}, []string{live.ID, all[0], all[1]}},
		{Filter{Kind: bench.JobKind, Status: bench.StatusFailed, Limit: 2}, failed[:2]},
		{Filter{Status: bench.StatusFailed}, failed},
		{Filter{Status: bench.StatusRunning}, []string{live.ID}},
		{Filter{Status: bench.StatusQueued}, nil},
		{Filter{Kind: "other"}, nil},
		{Filter{}, append([]string{live.ID}, all...)},
		{Filter{Limit: 2}, []string{live.ID, all[0]}}, // again, from what the walks learned
	}
	for _, tt := range tests {
		var got []string
		for _, j := range h.svc.List(tt.f) {
			got = append(got, j.ID)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("List(%+v) = %d jobs %q..., want %d", tt.f, len(got), got[:min(len(got), 3)], len(tt.want))
		}
	}
	h.svc.mu.Lock()
	cached := h.svc.final.Len()
	h.svc.mu.Unlock()
	if cached != cacheSize {
		t.Errorf("%d final jobs cached, bound %d", cached, cacheSize)
	}
	// The oldest job fell out of the cache and is read again.
	if j, err := h.svc.Get(all[n-1]); err != nil || j.Status != bench.StatusFailed {
		t.Errorf("oldest = %+v %v", j, err)
	}
	// A job that ends moves from memory to disk and keeps its place.
	h.svc.Cancel(live.ID)
	<-h.clock.Armed
	h.done(live.ID)
	if got := h.svc.List(Filter{Limit: 1}); len(got) != 1 || got[0].ID != live.ID || got[0].Status != bench.StatusCancelled {
		t.Errorf("after the end = %+v", got)
	}
	if got := h.svc.List(Filter{Status: bench.StatusCancelled}); len(got) != 1 {
		t.Errorf("cancelled = %+v", got)
	}
}

// TestIDsFromOutside: an id that is not a run id, or names no job directory
// of the runs directory, is not found, and nothing outside is read.
func TestIDsFromOutside(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	os.MkdirAll(runs, 0o755)
	// A job directory beside the runs directory, and a link to one.
	putJob(t, filepath.Dir(runs), "20261201T030000Z-beside", diskJob{Job: bench.Job{Status: bench.StatusDone}})
	os.Symlink(filepath.Join(filepath.Dir(runs), "20261201T030000Z-beside"), filepath.Join(runs, "20261201T030000Z-link00"))
	h := newHarness(t, runs, 0)
	for _, id := range []string{
		"", ".", "..", "../20261201T030000Z-beside", "..%2F20261201T030000Z-beside", openIndexFile, "a/b", `a\b`,
		"x\x00", strings.Repeat("a", maxIDLen+1), "20261201T030000Z-link00", "-flag",
	} {
		for name, f := range map[string]func() error{
			"Get":    func() error { _, err := h.svc.Get(id); return err },
			"Dir":    func() error { _, err := h.svc.Dir(id); return err },
			"Done":   func() error { _, err := h.svc.Done(id); return err },
			"Events": func() error { _, _, _, err := h.svc.Events(id, 0); return err },
			"Cancel": func() error { _, err := h.svc.Cancel(id); return err },
		} {
			if err := f(); !errors.Is(err, ErrNotFound) {
				t.Errorf("%s(%q) = %v", name, id, err)
			}
		}
	}
	if got := h.svc.List(Filter{}); len(got) != 0 {
		t.Errorf("list = %+v", got)
	}
}

func TestValidID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"20261202T155633Z-0a1b2c", true},
		{"manual-run", true},
		{"run_1.b", true},
		{"", false},
		{".open.json", false},
		{"..", false},
		{"a/b", false},
		{"a b", false},
		{"é", false},
		{strings.Repeat("a", maxIDLen), true},
		{strings.Repeat("a", maxIDLen+1), false},
	}
	for _, tt := range tests {
		if got := validID(tt.id); got != tt.ok {
			t.Errorf("validID(%q) = %v", tt.id, got)
		}
	}
}

// TestNewIDFollowsSubmits: List orders by id, so ids given in one second
// follow the order of the submits.
func TestNewIDFollowsSubmits(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	prefix := bench.NewRunID(now, "")
	tests := []struct {
		last string
		want string // "" for any id of now's second
	}{
		{"", ""},
		{prefix + "fffff0", prefix + "fffff1"},
		{prefix + "00000a", ""}, // a random suffix, after it
		{prefix + "ffffff", ""}, // nothing after it: random
		{bench.NewRunID(now.Add(-time.Second), "ffffff"), ""},
		{prefix + "0rphan", ""}, // not hex: random
	}
	for _, tt := range tests {
		s := &Service{lastID: tt.last}
		got := s.newIDLocked(now)
		if !strings.HasPrefix(got, prefix) || len(got) != len(prefix)+6 || (tt.want != "" && got != tt.want) {
			t.Errorf("after %q: %q, want %q", tt.last, got, tt.want)
		}
		if tt.last == prefix+"00000a" && got <= tt.last {
			t.Errorf("after %q: %q sorts before it", tt.last, got)
		}
		if s.lastID != got {
			t.Errorf("lastID = %q", s.lastID)
		}
	}
	// Submits in one second (the fake clock stands still) list newest first.
	h := newHarness(t, t.TempDir(), 8)
	blocker := h.submit("stubborn")
	h.waitEvent(blocker.ID, cellStarted)
	want := []string{blocker.ID}
	for range 4 {
		want = append([]string{h.submit("ok").ID}, want...)
	}
	var got []string
	for _, j := range h.svc.List(Filter{}) {
		got = append(got, j.ID)
	}
	if !slices.Equal(got, want) {
		t.Errorf("list = %q, want %q", got, want)
	}
}

// TestUpgradeOldIndex: a runs directory written before the ids file kept
// checkpoints (testdata/home-2026-12: .ids, .open.json, job.json) opens.
// The first start recovers the jobs .open.json names and no other, adds
// one checkpoint to .ids, leaving its lines as they were, and removes
// .open.json; the next start reads .ids alone, and writes nothing.
func TestUpgradeOldIndex(t *testing.T) {
	const (
		done    = "20261201T100000Z-aaaaaa"
		stray   = "20261201T110000Z-bbbbbb" // queued on disk, not in .open.json
		running = "20261201T120000Z-cccccc"
		queued  = "20261201T130000Z-dddddd"
	)
	runs := filepath.Join(t.TempDir(), "runs")
	if err := os.CopyFS(runs, os.DirFS("testdata/home-2026-12/runs")); err != nil {
		t.Fatal(err)
	}
	oldIDs, err := os.ReadFile(filepath.Join(runs, idsFile))
	if err != nil {
		t.Fatal(err)
	}
	statuses := func(want map[string]bench.JobStatus) {
		t.Helper()
		for id, status := range want {
			if got := diskStatus(t, runs, id); got != status {
				t.Errorf("%s on disk: %s, want %s", id, got, status)
			}
		}
	}
	first := newHarness(t, runs, 0)
	statuses(map[string]bench.JobStatus{done: bench.StatusDone, stray: bench.StatusQueued,
		running: bench.StatusFailed, queued: bench.StatusFailed})
	if _, err := os.Stat(filepath.Join(runs, openIndexFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s after the first start: %v", openIndexFile, err)
	}
	ids, _ := os.ReadFile(filepath.Join(runs, idsFile))
	if want := string(oldIDs) + "[]\n"; string(ids) != want {
		t.Errorf("%s = %q, want %q", idsFile, ids, want)
	}
	if err := first.svc.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	second := newHarness(t, runs, 0)
	statuses(map[string]bench.JobStatus{stray: bench.StatusQueued}) // not read: no scan
	if again, _ := os.ReadFile(filepath.Join(runs, idsFile)); string(again) != string(ids) {
		t.Errorf("the second start wrote %s: %q", idsFile, again)
	}
	var got []string
	for _, j := range second.svc.List(Filter{}) {
		got = append(got, j.ID+" "+string(j.Status))
	}
	want := []string{queued + " failed", running + " failed", stray + " failed", done + " done"}
	if !slices.Equal(got, want) {
		t.Errorf("list = %q, want %q", got, want)
	}
	// Listing read the stray, which the next start recovers.
	if open := openIDs(t, runs); !slices.Equal(open, []string{stray}) {
		t.Errorf("open after the list = %q", open)
	}
	if err := second.svc.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	newHarness(t, runs, 0)
	statuses(map[string]bench.JobStatus{stray: bench.StatusFailed})
	if open := openIDs(t, runs); len(open) != 0 {
		t.Errorf("open after the third start = %q", open)
	}
}
