package jobs

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

var stepNow = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

const stepGrace = 70 * time.Second

// States to step from.
func queuedState() jobState {
	return jobState{Job: bench.Job{ID: "j", Status: bench.StatusQueued, Stage: "queued"},
		cells: 2, phases: planPhases(bench.Plan{}), phase: -1}
}

func runningState() jobState {
	j := queuedState()
	j.Status, j.Stage = bench.StatusRunning, "running"
	j.runner = &runnerProc{Pid: 42, Pgid: 42, Start: "1"}
	return j
}

func with(j jobState, f func(*jobState)) jobState { f(&j); return j }

func cancelled(j *jobState) { j.cancelled, j.Stage = true, "cancelling" }
func shutdown(j *jobState)  { j.cancelled, j.shutdown, j.Stage = true, true, "cancelling" }
func hasExited(j *jobState) { j.exited, j.runner = true, nil }
func killed(j *jobState)    { j.killed = true }

func doneState() jobState {
	j, _ := transition(with(runningState(), hasExited), stepNow, settled{code: 0, rec: completeRecord()})
	return j
}

func completeRecord() bench.RunRecord {
	return bench.RunRecord{Complete: true, Cells: []bench.CellResult{{Status: bench.CellMeasured}, {Status: bench.CellMeasured}}}
}

var noRecord = &fs.PathError{Op: "open", Path: "/runs/j/run.json", Err: fs.ErrNotExist}

// TestTransition steps a job through every transition, no process started:
// the state it ends in and the events that say so.
func TestTransition(t *testing.T) {
	incomplete := bench.RunRecord{Problems: []string{"m/tree/a: decode"},
		Cells: []bench.CellResult{{Status: bench.CellMeasured}, {Status: bench.CellFailed}}}
	tests := []struct {
		name   string
		from   jobState
		in     input
		status bench.JobStatus
		stage  string // "": unchanged
		msg    string // the job's message ("": unchanged); also its error when final but done
		events []string
		check  func(t *testing.T, j jobState)
	}{
		{name: "queued behind the holder", from: queuedState(), in: queuedBehind{holder: "other", position: 2},
			status: bench.StatusQueued, events: []string{"log queued for the GPU behind other (position 2)"}},
		{name: "queued behind, but running", from: runningState(), in: queuedBehind{holder: "other", position: 2},
			status: bench.StatusRunning},
		{name: "leased without a GPU", from: queuedState(), in: leased{device: "no GPU found (NVML: libnvidia-ml.so.1 not found)"},
			status: bench.StatusRunning, stage: "starting", msg: "holds the GPU lease (this machine shows no GPU); starting the runner",
			events: []string{"started holds the GPU lease (this machine shows no GPU); starting the runner"}},
		{name: "leased while queued", from: queuedState(), in: leased{device: "NVIDIA H200 (139.8 GiB)"},
			status: bench.StatusRunning, stage: "starting", msg: "holds the GPU lease on NVIDIA H200 (139.8 GiB); starting the runner",
			events: []string{"started holds the GPU lease on NVIDIA H200 (139.8 GiB); starting the runner"},
			check: func(t *testing.T, j jobState) {
				if j.StartedAt != stepNow.UnixMilli() {
					t.Errorf("started at %d", j.StartedAt)
				}
			}},
		{name: "leased, started already", from: runningState(), in: leased{device: "H200"},
			status: bench.StatusRunning, stage: "running"},
		{name: "leased, cancelled before the runner", from: with(runningState(), cancelled), in: leased{},
			status: bench.StatusCancelled, msg: "cancelled before the runner started",
			events: []string{"cancelled cancelled before the runner started"}},
		{name: "leased, shut down before the runner", from: with(runningState(), shutdown), in: leased{},
			status: bench.StatusFailed, msg: MsgStoppedDuringRun, events: []string{"failed " + MsgStoppedDuringRun}},
		{name: "spawned", from: with(runningState(), func(j *jobState) { j.runner = nil }), in: spawned{runnerProc{Pid: 7, Pgid: 7, Start: "9"}},
			status: bench.StatusRunning, stage: "running", msg: "runner pid 7",
			check: func(t *testing.T, j jobState) {
				if j.runner == nil || *j.runner != (runnerProc{Pid: 7, Pgid: 7, Start: "9"}) {
					t.Errorf("runner = %+v", j.runner)
				}
			}},
		{name: "cancel while queued", from: queuedState(), in: cancel{grace: stepGrace},
			status: bench.StatusCancelled, msg: "cancelled while queued", events: []string{"cancelled cancelled while queued"}},
		{name: "shutdown while queued", from: queuedState(), in: cancel{shutdown: true, grace: stepGrace},
			status: bench.StatusFailed, msg: MsgStoppedQueued, events: []string{"failed " + MsgStoppedQueued}},
		{name: "cancel while running", from: runningState(), in: cancel{grace: stepGrace},
			status: bench.StatusRunning, stage: "cancelling",
			events: []string{"stage cancelling: SIGTERM to the runner, SIGKILL after 1 min 10 s"},
			check: func(t *testing.T, j jobState) {
				if !j.cancelled || j.shutdown {
					t.Errorf("cancelled %v shutdown %v", j.cancelled, j.shutdown)
				}
			}},
		{name: "shutdown while running", from: runningState(), in: cancel{shutdown: true, grace: stepGrace},
			status: bench.StatusRunning, stage: "cancelling",
			events: []string{"stage the backend is stopping: SIGTERM to the runner, SIGKILL after 1 min 10 s"},
			check: func(t *testing.T, j jobState) {
				if !j.cancelled || !j.shutdown {
					t.Errorf("cancelled %v shutdown %v", j.cancelled, j.shutdown)
				}
			}},
		{name: "cancel again", from: with(runningState(), cancelled), in: cancel{shutdown: true, grace: stepGrace},
			status: bench.StatusRunning, stage: "cancelling",
			check: func(t *testing.T, j jobState) {
				if j.shutdown {
					t.Error("a second cancel changed the first")
				}
			}},
		{name: "cancel after the runner exited", from: with(runningState(), hasExited), in: cancel{grace: stepGrace},
			status: bench.StatusRunning, stage: "running",
			check: func(t *testing.T, j jobState) {
				if j.cancelled {
					t.Error("a late cancel overwrote the runner's outcome")
				}
			}},
		{name: "cancel when final", from: doneState(), in: cancel{grace: stepGrace}, status: bench.StatusDone},
		{name: "grace over", from: with(runningState(), cancelled), in: graceOver{grace: stepGrace},
			status: bench.StatusRunning, events: []string{"log the runner ignored SIGTERM for 1 min 10 s: SIGKILL to its process group"},
			check: func(t *testing.T, j jobState) {
				if !j.killed {
					t.Error("not killed")
				}
			}},
		{name: "grace over after the exit", from: with(with(runningState(), cancelled), hasExited), in: graceOver{grace: stepGrace},
			status: bench.StatusRunning,
			check: func(t *testing.T, j jobState) {
				if j.killed {
					t.Error("killed an exited runner")
				}
			}},
		{name: "exited", from: runningState(), in: exited{}, status: bench.StatusRunning,
			check: func(t *testing.T, j jobState) {
				if !j.exited || j.runner != nil {
					t.Errorf("exited %v runner %+v", j.exited, j.runner)
				}
			}},
		{name: "exit 0, complete", from: with(runningState(), hasExited), in: settled{code: 0, rec: completeRecord()},
			status: bench.StatusDone, msg: "complete: 2 measured, 0 skipped, 0 failed of 2 cells",
			events: []string{"done complete: 2 measured, 0 skipped, 0 failed of 2 cells"},
			check: func(t *testing.T, j jobState) {
				if j.Progress != 1 || j.Error != "" || *j.ExitCode != 0 || j.FinishedAt != stepNow.UnixMilli() {
					t.Errorf("job = %+v", j.Job)
				}
			}},
		{name: "complete, history failed", from: with(runningState(), hasExited),
			in:     settled{code: 0, rec: completeRecord(), histErr: errors.New("disk full")},
			status: bench.StatusFailed, msg: "complete (2 measured, 0 skipped, 0 failed of 2 cells), but history could not keep it (disk full); the record stays in the run's run.json",
			events: []string{"failed complete (2 measured, 0 skipped, 0 failed of 2 cells), but history could not keep it (disk full); the record stays in the run's run.json"}},
		{name: "incomplete", from: with(runningState(), hasExited), in: settled{code: 1, rec: incomplete},
			status: bench.StatusFailed, msg: "the run is incomplete (exit 1): 1 measured, 0 skipped, 1 failed of 2 cells; first problem: m/tree/a: decode",
			events: []string{"failed the run is incomplete (exit 1): 1 measured, 0 skipped, 1 failed of 2 cells; first problem: m/tree/a: decode"},
			check: func(t *testing.T, j jobState) {
				if !slices.Equal(j.Problems, incomplete.Problems) || *j.ExitCode != 1 {
					t.Errorf("problems %q exit %d", j.Problems, *j.ExitCode)
				}
			}},
		{name: "crash, no record", from: with(with(runningState(), hasExited), func(j *jobState) { j.lastErr = "panic: boom" }),
			in:     settled{code: 3, recErr: noRecord},
			status: bench.StatusFailed, msg: "the runner exited with code 3 and wrote no readable run.json (missing): panic: boom",
			events: []string{"failed the runner exited with code 3 and wrote no readable run.json (missing): panic: boom"}},
		{name: "plan refused", from: with(with(runningState(), hasExited), func(j *jobState) { j.lastErr = "plan: empty" }),
			in:     settled{code: 2, recErr: noRecord},
			status: bench.StatusFailed, msg: "the runner refused the plan (exit 2): plan: empty",
			events: []string{"failed the runner refused the plan (exit 2): plan: empty"}},
		{name: "runner did not start", from: with(runningState(), hasExited),
			in:     settled{code: -1, err: &fs.PathError{Op: "fork/exec", Path: "/bin/runner", Err: fs.ErrPermission}, recErr: noRecord},
			status: bench.StatusFailed, msg: "could not run the runner: fork/exec: permission denied",
			events: []string{"failed could not run the runner: fork/exec: permission denied"}},
		{name: "cancelled, record written", from: with(with(runningState(), cancelled), hasExited),
			in:     settled{code: 143, rec: bench.RunRecord{Cancelled: true}},
			status: bench.StatusCancelled, msg: "cancelled", events: []string{"cancelled cancelled"}},
		{name: "cancelled, killed", from: with(with(with(runningState(), cancelled), killed), hasExited),
			in:     settled{code: 137, recErr: noRecord, grace: stepGrace},
			status: bench.StatusCancelled, msg: "cancelled; the runner did not stop within 1 min 10 s of SIGTERM and was killed; it wrote no run.json",
			events: []string{"cancelled cancelled; the runner did not stop within 1 min 10 s of SIGTERM and was killed; it wrote no run.json"}},
		{name: "shut down mid-run", from: with(with(runningState(), shutdown), hasExited),
			in:     settled{code: 143, rec: bench.RunRecord{Cancelled: true}},
			status: bench.StatusFailed, msg: MsgStoppedDuringRun, events: []string{"failed " + MsgStoppedDuringRun}},
		{name: "settled when final", from: doneState(), in: settled{code: 3, recErr: noRecord}, status: bench.StatusDone},
		{name: "final save failed", from: doneState(), in: saveFailed{&fs.PathError{Op: "open", Path: "/runs/j/job.json.tmp", Err: fs.ErrExist}},
			status: bench.StatusFailed, stage: string(bench.StatusFailed),
			msg:    "could not save the job's final state (open: file already exists); the run had ended: complete: 2 measured, 0 skipped, 0 failed of 2 cells",
			events: []string{"failed could not save the job's final state (open: file already exists); the run had ended: complete: 2 measured, 0 skipped, 0 failed of 2 cells"}},
		{name: "recovered mid-run", from: runningState(), in: recovered{},
			status: bench.StatusFailed, msg: MsgStoppedDuringRun, events: []string{"failed " + MsgStoppedDuringRun}},
		{name: "recovered while queued", from: queuedState(), in: recovered{},
			status: bench.StatusFailed, msg: MsgStoppedQueued, events: []string{"failed " + MsgStoppedQueued}},
		{name: "orphaned", from: runningState(), in: orphaned{pid: 42, grace: stepGrace},
			status: bench.StatusRunning, stage: "recovering",
			msg:    "the backend restarted while runner pid 42 ran: stopping it before the GPU is free",
			events: []string{"stage the backend restarted while runner pid 42 ran: stopping it before the GPU is free (SIGTERM to its process group, SIGKILL after 1 min 10 s)"}},
		{name: "orphan grace over", from: runningState(), in: graceOver{grace: stepGrace, orphan: true},
			status: bench.StatusRunning, events: []string{"log the orphaned runner ignored SIGTERM for 1 min 10 s: SIGKILL to its process group"}},
		{name: "orphan stopped", from: runningState(), in: orphanGone{pid: 42, grace: stepGrace},
			status: bench.StatusFailed, msg: MsgStoppedDuringRun + "; its runner (pid 42) still ran at restart and held the GPU until it ended: it stopped on SIGTERM",
			events: []string{"failed " + MsgStoppedDuringRun + "; its runner (pid 42) still ran at restart and held the GPU until it ended: it stopped on SIGTERM"}},
		{name: "orphan killed", from: with(runningState(), killed), in: orphanGone{pid: 42, grace: stepGrace, lingered: 10 * time.Second, noRecord: true},
			status: bench.StatusFailed,
			msg:    MsgStoppedDuringRun + "; its runner (pid 42) still ran at restart and held the GPU until it ended: it was killed after ignoring SIGTERM for 1 min 10 s, and was still there 10.0 s later; it wrote no run.json",
			events: []string{"failed " + MsgStoppedDuringRun + "; its runner (pid 42) still ran at restart and held the GPU until it ended: it was killed after ignoring SIGTERM for 1 min 10 s, and was still there 10.0 s later; it wrote no run.json"}},
		{name: "problem", from: with(runningState(), func(j *jobState) { j.Problems = []string{"history: x"} }), in: problem{"history: x"},
			status: bench.StatusRunning, events: []string{"log problem: history: x"},
			check: func(t *testing.T, j jobState) {
				if len(j.Problems) != 1 {
					t.Errorf("problems %q: a problem is kept once", j.Problems)
				}
			}},
		{name: "note", from: runningState(), in: note{"SIGTERM: no such process"},
			status: bench.StatusRunning, events: []string{"log SIGTERM: no such process"}},
		{name: "cell line", from: runningState(), in: runnerLine("=== m/tree/a ===", true),
			status: bench.StatusRunning, stage: "cell 1/2", msg: "m/tree/a", events: []string{"stage cell 1/2: m/tree/a"}},
		{name: "problem line", from: runningState(), in: runnerLine("  problem: decode failed", true),
			status: bench.StatusRunning, events: []string{"log problem: decode failed"},
			check: func(t *testing.T, j jobState) {
				if !slices.Equal(j.Problems, []string{"decode failed"}) {
					t.Errorf("problems %q", j.Problems)
				}
			}},
		{name: "stderr line", from: runningState(), in: runnerLine("panic: boom", false),
			status: bench.StatusRunning, events: []string{"log panic: boom"},
			check: func(t *testing.T, j jobState) {
				if j.lastErr != "panic: boom" || !slices.Equal(j.LogTail, []string{"panic: boom"}) {
					t.Errorf("last error %q tail %q", j.lastErr, j.LogTail)
				}
			}},
		// The log tail, the events and the last error are read by anyone
		// who may read the job: the server's paths are not in them (the
		// run directory's logs/runner.log keeps the lines as they were).
		{name: "paths in a line", from: runningState(), in: runnerLine("run x finished: complete=true exit=0 (/home/u/.mlx-metrics/metrics/bench/runs/x)", true),
			status: bench.StatusRunning, events: []string{"log run x finished: complete=true exit=0 (<path>)"},
			check: func(t *testing.T, j jobState) {
				if !slices.Equal(j.LogTail, []string{"run x finished: complete=true exit=0 (<path>)"}) {
					t.Errorf("tail %q", j.LogTail)
				}
			}},
		{name: "paths in stderr", from: runningState(), in: runnerLine("plan: open /srv/mlx/bench/jobs/x/plan.json: no such file or directory; runner /usr/local/bin/mlx-metrics", false),
			status: bench.StatusRunning, events: []string{"log plan: open <path>: no such file or directory; runner <path>"},
			check: func(t *testing.T, j jobState) {
				if j.lastErr != "plan: open <path>: no such file or directory; runner <path>" || len(j.LogTail) != 1 || j.LogTail[0] != j.lastErr {
					t.Errorf("last error %q tail %q", j.lastErr, j.LogTail)
				}
			}},
		{name: "a path in a problem", from: runningState(), in: runnerLine("  problem: m/tree/a: engine: exec /opt/mlx/bin/python: permission denied", true),
			status: bench.StatusRunning, events: []string{"log problem: m/tree/a: engine: exec <path>: permission denied"}},
		{name: "line when final", from: doneState(), in: runnerLine("late", true), status: bench.StatusDone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, evs := transition(tt.from, stepNow, tt.in)
			if j.Status != tt.status {
				t.Errorf("status %q, want %q", j.Status, tt.status)
			}
			wantStage := tt.stage
			if wantStage == "" {
				wantStage = tt.from.Stage
				if isFinal(j.Status) && !isFinal(tt.from.Status) {
					wantStage = string(j.Status)
				}
			}
			if j.Stage != wantStage {
				t.Errorf("stage %q, want %q", j.Stage, wantStage)
			}
			if tt.msg != "" && j.Message != tt.msg {
				t.Errorf("message %q, want %q", j.Message, tt.msg)
			}
			if isFinal(j.Status) && j.Status != bench.StatusDone && tt.msg != "" && j.Error != tt.msg {
				t.Errorf("error %q, want %q", j.Error, tt.msg)
			}
			var got []string
			for _, e := range evs {
				got = append(got, e.Type+" "+e.Message)
				if e.Seq != 0 || e.At != stepNow.UnixMilli() {
					t.Errorf("event %+v: seq is the log's, at is now", e)
				}
			}
			if !slices.Equal(got, tt.events) {
				t.Errorf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.events, "\n"))
			}
			if isFinal(j.Status) && !isFinal(tt.from.Status) && (len(evs) != 1 || evs[0].Progress == nil) {
				t.Errorf("an end gives one final event with progress: %+v", evs)
			}
			if tt.check != nil {
				tt.check(t, j)
			}
		})
	}
}

// TestTransitionLeavesItsInput: a step does not change the state it was
// given, slices included, so two steps from one state do not meet.
func TestTransitionLeavesItsInput(t *testing.T) {
	from := runningState()
	from.LogTail = make([]string, 1, 8)
	from.LogTail[0] = "first"
	from.Problems = make([]string, 0, 8)
	a, _ := transition(from, stepNow, runnerLine("a", true))
	b, _ := transition(from, stepNow, runnerLine("b", true))
	pa, _ := transition(from, stepNow, problem{"pa"})
	pb, _ := transition(from, stepNow, problem{"pb"})
	if !slices.Equal(a.LogTail, []string{"first", "a"}) || !slices.Equal(b.LogTail, []string{"first", "b"}) {
		t.Fatalf("log tails %q %q", a.LogTail, b.LogTail)
	}
	if !slices.Equal(pa.Problems, []string{"pa"}) || !slices.Equal(pb.Problems, []string{"pb"}) {
		t.Fatalf("problems %q %q", pa.Problems, pb.Problems)
	}
	if len(from.LogTail) != 1 || len(from.Problems) != 0 {
		t.Fatalf("input changed: %+v", from.Job)
	}
}

// TestTransitionLife steps one job from submit to its end as the service
// feeds it: queued, leased, spawned, a cell, cancelled, killed, exited,
// settled; and keeps the log tail bounded on the way.
func TestTransitionLife(t *testing.T) {
	j := queuedState()
	var all []string
	feed := func(in input) {
		var evs []bench.JobEvent
		j, evs = transition(j, stepNow, in)
		for _, e := range evs {
			all = append(all, e.Type)
		}
	}
	feed(queuedBehind{holder: "other", position: 1})
	feed(leased{device: "H200"})
	feed(leased{device: "H200"}) // run's own, after Submit's
	feed(spawned{runnerProc{Pid: 7, Pgid: 7}})
	feed(runnerLine("=== m/tree/a ===", true))
	for i := range logTailLines + 5 {
		feed(runnerLine(fmt.Sprint("line ", i), true))
	}
	feed(cancel{grace: stepGrace})
	feed(graceOver{grace: stepGrace})
	feed(exited{})
	feed(settled{code: 137, recErr: noRecord, grace: stepGrace})
	want := []string{bench.EventLog, bench.EventStarted, bench.EventStage}
	for range logTailLines + 5 {
		want = append(want, bench.EventLog)
	}
	want = append(want, bench.EventStage, bench.EventLog, bench.EventCancelled)
	if !slices.Equal(all, want) {
		t.Fatalf("events %q, want %q", all, want)
	}
	if j.Status != bench.StatusCancelled || !strings.Contains(j.Error, "was killed") || len(j.LogTail) != logTailLines || j.runner != nil {
		t.Fatalf("job = %+v", j.Job)
	}
}
