package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/jobs/jobstest"
	"github.com/mlx-bun/mlx-metrics/backend/internal/leaktest"
	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/gpu/lease"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// TestMain doubles as the job runners jobstest starts, and fails the
// package's tests when a goroutine they started is still running at the
// end (leaktest).
func TestMain(m *testing.M) {
	jobstest.Main()
	leaktest.VerifyTestMain(m)
}

// newFakeClock stands still at one time; its grace periods end only when
// the test says (jobstest.Clock).
func newFakeClock() *jobstest.Clock {
	return jobstest.NewClock(clock.NewFake(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)))
}

type harness struct {
	t     *testing.T
	svc   *Service
	lease *lease.Lease
	clock *jobstest.Clock
	dir   string

	mu      sync.Mutex
	records []bench.RunRecord
}

func newHarness(t *testing.T, dir string, maxQueued int) *harness {
	t.Helper()
	return newHarnessLog(t, dir, maxQueued, testLogger(t))
}

// newHarnessLog is newHarness with the service's log going to logger.
func newHarnessLog(t *testing.T, dir string, maxQueued int, logger *slog.Logger) *harness {
	t.Helper()
	h := &harness{t: t, lease: lease.New("no GPU found", lease.Options{}), clock: newFakeClock(), dir: dir}
	argv, env := jobstest.RunnerArgv()
	svc, err := New(Options{
		RunsDir:   dir,
		Lease:     h.lease,
		Runner:    argv,
		Env:       env,
		Clock:     h.clock,
		MaxQueued: maxQueued,
		Finished: func(rec bench.RunRecord, runDir string) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.records = append(h.records, rec)
			return nil
		},
		Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.svc = svc
	t.Cleanup(func() {
		// Stop whatever a failed test left running; Close waits for it.
		for _, j := range svc.List(Filter{}) {
			if !isFinal(j.Status) {
				svc.Cancel(j.ID)
			}
		}
		go func() { // ends every grace period at once, until Close is done
			for ch := range h.clock.Armed {
				ch <- time.Time{}
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := svc.Close(ctx); err != nil {
			t.Errorf("a job outlived Close: %v", err)
			return // its runner may still arm a timer
		}
		close(h.clock.Armed)
	})
	return h
}

func plan(script string, cells int) bench.Plan { return jobstest.Plan(script, cells) }

func (h *harness) submit(script string) bench.Job {
	h.t.Helper()
	j, err := h.svc.Submit("p-"+script, plan(script, 2))
	if err != nil {
		h.t.Fatal(err)
	}
	return j
}

// wait is the test's safeguard against a hang, not a synchronisation.
const wait = 60 * time.Second

func (h *harness) done(id string) bench.Job {
	h.t.Helper()
	ch, err := h.svc.Done(id)
	if err != nil {
		h.t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(wait):
		h.t.Fatalf("job %s did not end", id)
	}
	j, _ := h.svc.Get(id)
	return j
}

// waitEvent follows the job's log until an event satisfies ok.
func (h *harness) waitEvent(id string, ok func(bench.JobEvent) bool) bench.JobEvent {
	h.t.Helper()
	deadline := time.After(wait)
	after := 0
	for {
		evs, changed, ended, err := h.svc.Events(id, after)
		if err != nil {
			h.t.Fatal(err)
		}
		for _, e := range evs {
			if ok(e) {
				return e
			}
			after = e.Seq
		}
		if ended {
			h.t.Fatalf("job %s ended without the event", id)
		}
		select {
		case <-changed:
		case <-deadline:
			h.t.Fatalf("job %s: no such event", id)
		}
	}
}

func cellStarted(e bench.JobEvent) bool {
	return e.Type == bench.EventStage && strings.HasPrefix(e.Message, "cell 1/")
}

func TestParseLine(t *testing.T) {
	tests := []struct {
		line string
		kind int
		text string
	}{
		{"=== m/tree/a ===", lineCell, "m/tree/a"},
		{"=== model x/tree/cfg 1 ===\r", lineCell, "model x/tree/cfg 1"},
		{"  problem: decode failed twice", lineProblem, "decode failed twice"},
		{"\tproblem: tabbed", lineProblem, "tabbed"},
		{"problem: not indented is log", lineLog, "problem: not indented is log"},
		{"===  ===", lineLog, "===  ==="},
		{"=== unterminated", lineLog, "=== unterminated"},
		{"decode run 1: 123.4 tok/s", lineLog, "decode run 1: 123.4 tok/s"},
		{"", lineLog, ""},
	}
	for _, tt := range tests {
		kind, text := parseLine(tt.line)
		if kind != tt.kind || text != tt.text {
			t.Errorf("parseLine(%q) = %d %q, want %d %q", tt.line, kind, text, tt.kind, tt.text)
		}
	}
}

func TestLineWriter(t *testing.T) {
	var got []string
	w := &lineWriter{f: func(s string) { got = append(got, s) }, max: 8}
	for _, chunk := range []string{"ab", "c\nde", "f\n\n", "0123456789", "x"} {
		w.Write([]byte(chunk))
	}
	w.flush()
	want := []string{"abc", "def", "", "01234567", "89x"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("lines = %q, want %q", got, want)
	}
}

func TestRunOutcomes(t *testing.T) {
	tests := []struct {
		script     string
		status     bench.JobStatus
		exit       int
		errHas     string
		problems   int
		records    int
		lastEvent  string
		finalStage string
	}{
		{"ok", bench.StatusDone, 0, "", 0, 1, bench.EventDone, "done"},
		{"incomplete", bench.StatusFailed, 1, "incomplete (exit 1): 1 measured, 0 skipped, 1 failed of 2 cells; first problem: m/tree/a: decode", 1, 1, bench.EventFailed, "failed"},
		{"crash", bench.StatusFailed, 3, "exited with code 3 and wrote no readable run.json (missing): panic: boom", 0, 0, bench.EventFailed, "failed"},
		{"refuse", bench.StatusFailed, 2, "refused the plan (exit 2): plan: cells[0].server.argv: empty", 0, 0, bench.EventFailed, "failed"},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			h := newHarness(t, t.TempDir(), 0)
			j := h.submit(tt.script)
			if j.Status != bench.StatusRunning || j.RunID != j.ID || j.Kind != bench.JobKind {
				t.Fatalf("submitted = %+v", j)
			}
			j = h.done(j.ID)
			if j.Status != tt.status || j.ExitCode == nil || *j.ExitCode != tt.exit {
				t.Fatalf("job = %+v", j)
			}
			if !strings.Contains(j.Error, tt.errHas) {
				t.Fatalf("error %q lacks %q", j.Error, tt.errHas)
			}
			if len(j.Problems) != tt.problems || j.Stage != tt.finalStage {
				t.Fatalf("problems %q stage %q", j.Problems, j.Stage)
			}
			if len(h.records) != tt.records {
				t.Fatalf("history got %d records", len(h.records))
			}
			if h.lease.State().Held {
				t.Fatal("lease still held")
			}
			evs, _, ended, err := h.svc.Events(j.ID, 0)
			if err != nil || !ended {
				t.Fatal(err, ended)
			}
			if evs[0].Type != bench.EventStarted || evs[len(evs)-1].Type != tt.lastEvent {
				t.Fatalf("events = %+v", evs)
			}
			for i, e := range evs {
				if e.Seq != i+1 {
					t.Fatalf("event %d has seq %d", i, e.Seq)
				}
			}
			// The file is the same log, so a restart replays it unchanged.
			again, _, _ := readEvents(filepath.Join(h.dir, j.ID), 0, 0)
			if len(again) != len(evs) {
				t.Fatalf("disk has %d events, service %d", len(again), len(evs))
			}
		})
	}
}

func TestProgress(t *testing.T) {
	h := newHarness(t, t.TempDir(), 0)
	j := h.done(h.submit("ok").ID)
	evs, _, _, _ := h.svc.Events(j.ID, 0)
	var stages []string
	var progress []float64
	var logs []string
	for _, e := range evs {
		switch e.Type {
		case bench.EventStage:
			stages = append(stages, e.Message)
			progress = append(progress, *e.Progress)
		case bench.EventLog:
			logs = append(logs, e.Message)
		}
	}
	if strings.Join(stages, "|") != "cell 1/2: m/tree/a|cell 2/2: m/tree/b" || progress[0] != 0 || progress[1] != 0.5 {
		t.Fatalf("stages %q progress %v", stages, progress)
	}
	if j.Progress != 1 || j.Message != "complete: 2 measured, 0 skipped, 0 failed of 2 cells" {
		t.Fatalf("job = %+v", j)
	}
	for _, want := range []string{"cold start 12 ms", "server: ready", "last line without newline"} {
		found := false
		for _, l := range logs {
			found = found || l == want
		}
		if !found {
			t.Errorf("log lacks %q: %q", want, logs)
		}
	}
	if len(j.LogTail) == 0 {
		t.Error("no log tail")
	}
	// Replay from the middle.
	tail, _, _, _ := h.svc.Events(j.ID, 3)
	if tail[0].Seq != 4 || len(tail) != len(evs)-3 {
		t.Fatalf("replay after 3: %+v", tail)
	}
}

func TestCancelMidCell(t *testing.T) {
	h := newHarness(t, t.TempDir(), 0)
	j := h.submit("block")
	h.waitEvent(j.ID, cellStarted)
	c, err := h.svc.Cancel(j.ID)
	if err != nil || c.Stage != "cancelling" || c.Status != bench.StatusRunning {
		t.Fatalf("cancel = %+v %v", c, err)
	}
	<-h.clock.Armed // the SIGKILL timer is armed but never fires here
	j = h.done(j.ID)
	if j.Status != bench.StatusCancelled || j.Error != "cancelled" || *j.ExitCode != 143 {
		t.Fatalf("job = %+v", j)
	}
	if h.lease.State().Held {
		t.Fatal("lease still held")
	}
	if len(h.records) != 1 || !h.records[0].Cancelled {
		t.Fatalf("record not kept: %+v", h.records)
	}
	if _, err := os.Stat(filepath.Join(h.dir, j.ID, ReportFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.Cancel(j.ID); !errors.Is(err, ErrFinished) {
		t.Fatalf("second cancel: %v", err)
	}
}

// TestCancelAfterRunnerExited cancels while the job settles from a runner
// that has exited (its record is going to history): the run was complete,
// and the job ends done, not cancelled.
func TestCancelAfterRunnerExited(t *testing.T) {
	var svc *Service
	argv, env := jobstest.RunnerArgv()
	svc, err := New(Options{
		RunsDir: t.TempDir(), Lease: lease.New("no GPU found", lease.Options{}), Runner: argv, Env: env,
		Clock: newFakeClock(), Logger: testLogger(t),
		Finished: func(rec bench.RunRecord, _ string) error {
			j, err := svc.Cancel(rec.ID)
			if err != nil || j.Status != bench.StatusRunning || j.Stage == "cancelling" {
				t.Errorf("cancel while settling = %+v %v", j, err)
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(context.Background())
	j, err := svc.Submit("p-ok", plan("ok", 2))
	if err != nil {
		t.Fatal(err)
	}
	<-mustDone(t, svc, j.ID)
	if j, _ = svc.Get(j.ID); j.Status != bench.StatusDone || j.Error != "" {
		t.Fatalf("job = %+v", j)
	}
}

// TestHistoryFailureFailsJob: a complete run whose record history could not
// keep fails its job (Options.Finished), saying where the record is.
func TestHistoryFailureFailsJob(t *testing.T) {
	argv, env := jobstest.RunnerArgv()
	dir := t.TempDir()
	svc, err := New(Options{
		RunsDir: dir, Lease: lease.New("no GPU found", lease.Options{}), Runner: argv, Env: env,
		Clock: newFakeClock(), Logger: testLogger(t),
		// As Badger words it: with the path, which no client may see.
		Finished: func(rec bench.RunRecord, runDir string) error {
			return fmt.Errorf("write %s/history/000001.vlog: disk full", runDir)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(context.Background())
	j, err := svc.Submit("p-ok", plan("ok", 2))
	if err != nil {
		t.Fatal(err)
	}
	<-mustDone(t, svc, j.ID)
	j, _ = svc.Get(j.ID)
	if j.Status != bench.StatusFailed || *j.ExitCode != 0 || !strings.Contains(j.Error, "history could not keep it (write <path>: disk full)") ||
		!strings.Contains(j.Error, recordFile) || strings.Contains(j.Error, dir) || len(j.Problems) != 1 || j.Problems[0] != "history: write <path>: disk full" {
		t.Fatalf("job = %+v", j)
	}
}

func TestCancelKillsAfterGrace(t *testing.T) {
	h := newHarness(t, t.TempDir(), 0)
	j := h.submit("stubborn")
	h.waitEvent(j.ID, cellStarted)
	if _, err := h.svc.Cancel(j.ID); err != nil {
		t.Fatal(err)
	}
	timer := <-h.clock.Armed
	select {
	case <-mustDone(t, h.svc, j.ID):
		t.Fatal("the runner ended before the grace period")
	default:
	}
	timer <- time.Time{} // the grace period is over
	j = h.done(j.ID)
	if j.Status != bench.StatusCancelled || *j.ExitCode != 128+9 || !strings.Contains(j.Error, "was killed") || !strings.Contains(j.Error, "no run.json") {
		t.Fatalf("job = %+v", j)
	}
	if h.lease.State().Held {
		t.Fatal("lease still held")
	}
}

func mustDone(t *testing.T, s *Service, id string) <-chan struct{} {
	ch, err := s.Done(id)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func TestQueue(t *testing.T) {
	h := newHarness(t, t.TempDir(), 2)
	a := h.submit("stubborn")
	h.waitEvent(a.ID, cellStarted)
	b := h.submit("ok")
	c := h.submit("ok")
	if b.Status != bench.StatusQueued || b.Position != 1 || c.Position != 2 {
		t.Fatalf("b = %+v, c = %+v", b, c)
	}
	if s := h.lease.State(); s.Holder != a.ID || s.Waiting != 2 {
		t.Fatalf("lease = %+v", s)
	}
	if _, err := h.svc.Submit("p", plan("ok", 1)); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("third queued: %v", err)
	}
	queued := h.svc.List(Filter{Kind: bench.JobKind, Status: bench.StatusQueued})
	if len(queued) != 2 {
		t.Fatalf("queued = %+v", queued)
	}
	// Cancelling a queued job moves the next one up at once.
	cc, err := h.svc.Cancel(c.ID)
	if err != nil || cc.Status != bench.StatusCancelled || cc.Error != "cancelled while queued" {
		t.Fatalf("cancel queued = %+v %v", cc, err)
	}
	if s := h.lease.State(); s.Waiting != 1 {
		t.Fatalf("lease = %+v", s)
	}
	h.svc.Cancel(a.ID)
	timer := <-h.clock.Armed
	// a's runner ignores SIGTERM, so it holds the GPU until the grace
	// period ends, and b waits.
	if got, _ := h.svc.Get(b.ID); got.Status != bench.StatusQueued || got.Position != 1 || h.lease.State().Holder != a.ID {
		t.Fatalf("b while a is cancelling = %+v, lease %+v", got, h.lease.State())
	}
	timer <- time.Time{}
	if a = h.done(a.ID); a.Status != bench.StatusCancelled {
		t.Fatalf("a = %+v", a)
	}
	if b = h.done(b.ID); b.Status != bench.StatusDone {
		t.Fatalf("b = %+v", b)
	}
	all := h.svc.List(Filter{Kind: bench.JobKind})
	if len(all) != 3 {
		t.Fatalf("list = %+v", all)
	}
	if got := h.svc.List(Filter{Status: bench.StatusDone}); len(got) != 1 || got[0].ID != b.ID {
		t.Fatalf("done = %+v", got)
	}
}

// TestRestartMidRun: the jobs of a backend that went away with no runner
// left running all end failed, with what their runners left kept.
func TestRestartMidRun(t *testing.T) {
	dir := t.TempDir()
	mkjob := func(id string, dj diskJob, events ...string) {
		os.MkdirAll(filepath.Join(dir, id), 0o755)
		dj.ID, dj.Kind, dj.RunID = id, bench.JobKind, id
		writeJSON(filepath.Join(dir, id, jobFile), dj)
		for i, msg := range events {
			writeJSONLine(t, filepath.Join(dir, id, eventsFile), bench.JobEvent{Seq: i + 1, Type: bench.EventLog, Message: msg})
		}
	}
	const (
		running = "20261201T100000Z-aaaaaa"
		reused  = "20261201T100000Z-bbbbbb"
		queued  = "20261201T100000Z-cccccc"
		old     = "20261201T100000Z-dddddd"
	)
	// A runner pid that is now another process's (this test's own): it
	// must neither be waited for nor signalled.
	self := &runnerProc{Pid: os.Getpid(), Pgid: os.Getpid(), Start: "not its start time"}
	mkjob(running, diskJob{Job: bench.Job{Status: bench.StatusRunning}, Runner: &runnerProc{Pid: 1 << 22, Pgid: 1 << 22, Start: "1"}}, "started", "cell 1/2")
	mkjob(reused, diskJob{Job: bench.Job{Status: bench.StatusRunning}, Runner: self})
	mkjob(queued, diskJob{Job: bench.Job{Status: bench.StatusQueued}}, "queued")
	// A job.json from before runners were recorded, whose runner still
	// wrote its record.
	mkjob(old, diskJob{Job: bench.Job{Status: bench.StatusRunning}})
	writeJSON(filepath.Join(dir, old, recordFile), bench.RunRecord{StartedAt: 1, FinishedAt: 2})
	// Not a job at all: left alone.
	os.MkdirAll(filepath.Join(dir, "manual-run"), 0o755)

	second := newHarness(t, dir, 0)
	tests := []struct {
		id     string
		status bench.JobStatus
		err    string
	}{
		{running, bench.StatusFailed, MsgStoppedDuringRun},
		{reused, bench.StatusFailed, MsgStoppedDuringRun},
		{queued, bench.StatusFailed, MsgStoppedQueued},
		{old, bench.StatusFailed, MsgStoppedDuringRun},
	}
	for _, tt := range tests {
		j, err := second.svc.Get(tt.id)
		if err != nil || j.Status != tt.status || j.Error != tt.err {
			t.Errorf("%s = %+v %v", tt.id, j, err)
		}
		evs, _, ended, _ := second.svc.Events(tt.id, 0)
		if !ended || evs[len(evs)-1].Type != bench.EventFailed || evs[len(evs)-1].Message != tt.err {
			t.Errorf("%s events = %+v", tt.id, evs)
		}
		for i, e := range evs { // the recovered log continues its numbering
			if e.Seq != i+1 {
				t.Errorf("%s: event %d has seq %d", tt.id, i, e.Seq)
			}
		}
	}
	if second.lease.State().Held {
		t.Error("the lease is held after recovery")
	}
	if len(second.records) != 1 || second.records[0].ID != old {
		t.Errorf("orphan record not kept: %+v", second.records)
	}
	if len(second.svc.List(Filter{})) != 4 {
		t.Errorf("list = %+v", second.svc.List(Filter{}))
	}
	// A third start finds them final and leaves them be.
	third := newHarness(t, dir, 0)
	if j, _ := third.svc.Get(running); j.Error != MsgStoppedDuringRun {
		t.Errorf("third = %+v", j)
	}
	if _, err := third.svc.Get("manual-run"); !errors.Is(err, ErrNotFound) {
		t.Errorf("manual-run: %v", err)
	}
}

func writeJSONLine(t *testing.T, path string, v any) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, _ := json.Marshal(v)
	f.Write(append(data, '\n'))
}

// TestSubmitFailureLeavesNothing: a submit that fails half way leaves no
// directory for recovery to find, no job and a free lease.
func TestSubmitFailureLeavesNothing(t *testing.T) {
	h := newHarness(t, t.TempDir(), 0)
	bad := plan("ok", 1)
	bad.Phases.UnstableSpread = math.NaN() // plan.json cannot be written
	if _, err := h.svc.Submit("p", bad); err == nil {
		t.Fatal("Submit wrote a plan that JSON cannot hold")
	}
	// The ids file names the job (List passes over an id with no
	// directory), and no longer has it open; no run directory is left.
	if entries, _ := os.ReadDir(h.dir); len(entries) != 1 || entries[0].Name() != idsFile {
		t.Fatalf("left behind: %v", entries)
	}
	if open := openIDs(t, h.dir); len(open) != 0 {
		t.Fatalf("open index = %q", open)
	}
	if len(h.svc.List(Filter{})) != 0 || h.lease.State().Held {
		t.Fatalf("jobs %+v, lease %+v", h.svc.List(Filter{}), h.lease.State())
	}
}

func TestUnknownJob(t *testing.T) {
	h := newHarness(t, t.TempDir(), 0)
	for _, f := range []func() error{
		func() error { _, err := h.svc.Get("x"); return err },
		func() error { _, err := h.svc.Cancel("x"); return err },
		func() error { _, _, _, err := h.svc.Events("x", 0); return err },
		func() error { _, err := h.svc.Dir("x"); return err },
	} {
		if err := f(); !errors.Is(err, ErrNotFound) {
			t.Errorf("err = %v", err)
		}
	}
}

func TestCloseStopsJobs(t *testing.T) {
	h := newHarness(t, t.TempDir(), 0)
	a := h.submit("block")
	h.waitEvent(a.ID, cellStarted)
	b := h.submit("ok")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := h.svc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ id, err string }{
		{a.ID, MsgStoppedDuringRun},
		{b.ID, MsgStoppedQueued},
	}
	for _, tt := range tests {
		j, _ := h.svc.Get(tt.id)
		if j.Status != bench.StatusFailed || j.Error != tt.err {
			t.Errorf("%s = %+v", tt.id, j)
		}
	}
	if len(h.records) != 1 || h.records[0].ID != a.ID {
		t.Errorf("records = %+v", h.records)
	}
	if _, err := h.svc.Submit("p", plan("ok", 1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Submit after Close: %v", err)
	}
}

// testLogger logs into the test's output.
func testLogger(t testing.TB) *slog.Logger {
	return logging.Func(func(level slog.Level, msg string) { t.Log(level, msg) })
}
