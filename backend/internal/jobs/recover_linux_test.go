package jobs

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/jobs/jobstest"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// startOrphan starts the fake runner playing script in a process group of
// its own, as the job service does, and writes the job.json a backend
// killed mid-run would have left: the backend is gone, the runner is not.
// It returns once the runner has started its cell, with a function that
// closes the runner's stdin (which the slow-stop script waits for).
func startOrphan(t *testing.T, dir, id, script string) (runnerProc, <-chan struct{}, func()) {
	t.Helper()
	jobDir := filepath.Join(dir, id)
	if err := os.MkdirAll(jobDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeJSON(filepath.Join(jobDir, planFile), jobstest.Plan(script, 1))
	argv, env := jobstest.RunnerArgv()
	cmd := exec.Command(argv[0], append(argv[1:], "--plan", filepath.Join(jobDir, planFile), "--out", jobDir, "--id", id, "--profile", "p")...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }() // reaps it: this test is its parent
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-exited })
	sc := bufio.NewScanner(r)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "=== ") {
	}
	go io.Copy(io.Discard, r)
	start, err := procStart(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	p := runnerProc{Pid: cmd.Process.Pid, Pgid: cmd.Process.Pid, Start: start}
	writeJSON(filepath.Join(jobDir, jobFile), diskJob{
		Job:    bench.Job{ID: id, Kind: bench.JobKind, Profile: "p", Status: bench.StatusRunning, RunID: id, Stage: "cell 1/1"},
		Runner: &p,
	})
	return p, exited, func() { stdin.Close() }
}

// TestRestartWithLiveRunner: after a crash of the backend its runner may
// still run, holding the GPU. The restarted backend keeps the lease until
// that runner has stopped (SIGTERM, SIGKILL after the grace period), keeps
// the record it wrote, and only then runs the next job. It finds the job
// by the ids file the crashed backend left (its id after the last
// checkpoint), or, in a home with none, by reading every job.
func TestRestartWithLiveRunner(t *testing.T) {
	const id = "20261201T100000Z-0rphan"
	tests := []struct {
		name    string
		script  string
		ids     string // the ids file left ("": none)
		kill    bool   // it ignores SIGTERM: the grace period ends
		records int
		errHas  string
	}{
		{"slow-stop", "slow-stop", "", false, 1, "it stopped on SIGTERM"},
		{"stubborn", "stubborn", "", true, 0, "killed after ignoring SIGTERM"},
		{"slow-stop, ids file", "slow-stop", "[]\n" + id + "\n", false, 1, "it stopped on SIGTERM"},
		{"stubborn, ids file", "stubborn", "[]\n" + id + "\n", true, 0, "killed after ignoring SIGTERM"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p, exited, letStop := startOrphan(t, dir, id, tt.script)
			if tt.ids != "" {
				if err := os.WriteFile(filepath.Join(dir, idsFile), []byte(tt.ids), 0o644); err != nil {
					t.Fatal(err)
				}
			}

			h := newHarness(t, dir, 0)
			if st := h.lease.State(); !st.Held || st.Holder != id {
				t.Fatalf("lease = %+v, want held by the orphan's job", st)
			}
			next := h.submit("ok")
			if next.Status != bench.StatusQueued || next.Position != 1 {
				t.Fatalf("next job = %+v, want queued behind the orphan", next)
			}
			timer := <-h.clock.Armed // the grace period
			if !running(p) {
				t.Fatal("the orphan stopped before the test let it")
			}
			if tt.kill {
				timer <- time.Time{}
			} else {
				letStop()
			}
			j := h.done(id)
			if j.Status != bench.StatusFailed || !strings.HasPrefix(j.Error, MsgStoppedDuringRun) || !strings.Contains(j.Error, tt.errHas) {
				t.Fatalf("orphan's job = %+v", j)
			}
			select {
			case <-exited:
			case <-time.After(wait):
				t.Fatal("the orphaned runner still runs")
			}
			if running(p) {
				t.Fatal("running() says the reaped runner runs")
			}
			// What the orphan wrote goes to history (Finished), as its own run.
			h.mu.Lock()
			records := append([]bench.RunRecord(nil), h.records...)
			h.mu.Unlock()
			if len(records) != tt.records {
				t.Fatalf("records = %d, want %d", len(records), tt.records)
			}
			for _, rec := range records {
				if rec.ID != id {
					t.Fatalf("history got run %q, want the orphan's %q", rec.ID, id)
				}
			}
			if j := h.done(next.ID); j.Status != bench.StatusDone {
				t.Fatalf("next job = %+v", j)
			}
			if open := openIDs(t, dir); len(open) != 0 {
				t.Fatalf("open in the index after both ended: %q", open)
			}
		})
	}
}

// TestRunnerRecorded: job.json names the running runner by pid, group and
// start time, and drops it once the runner has exited.
func TestRunnerRecorded(t *testing.T) {
	h := newHarness(t, t.TempDir(), 0)
	j := h.submit("block")
	h.waitEvent(j.ID, cellStarted)
	var dj diskJob
	if err := readJSON(filepath.Join(h.dir, j.ID, jobFile), &dj); err != nil {
		t.Fatal(err)
	}
	h.svc.mu.Lock()
	pid := h.svc.live[j.ID].sup.pid()
	h.svc.mu.Unlock()
	start, err := procStart(pid)
	if err != nil || dj.Runner == nil || dj.Runner.Pid != pid || dj.Runner.Pgid != pid || dj.Runner.Start != start || !running(*dj.Runner) {
		t.Fatalf("job.json runner = %+v, want pid %d start %s (%v)", dj.Runner, pid, start, err)
	}
	h.svc.Cancel(j.ID)
	h.done(j.ID)
	dj = diskJob{}
	readJSON(filepath.Join(h.dir, j.ID, jobFile), &dj)
	if dj.Runner != nil || dj.Status != bench.StatusCancelled {
		t.Fatalf("final job.json = %+v", dj)
	}
}
