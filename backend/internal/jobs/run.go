package jobs

import (
	"fmt"
	"os"
	"runtime"

	"github.com/mlx-bun/mlx-metrics/backend/internal/redact"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/logkey"
)

// run waits for the job's turn on the GPU, runs the runner and settles the
// job from its exit and its record.
func (s *Service) run(j *job) {
	defer s.wg.Done()
	select {
	case <-j.ticket.Ready():
	case <-j.done: // cancelled while queued
		return
	}
	defer j.ticket.Release()

	s.mu.Lock()
	if isFinal(j.Status) { // cancelled as the lease came
		s.mu.Unlock()
		return
	}
	queued := j.Status == bench.StatusQueued
	s.applyLocked(j, leased{device: s.opts.Lease.State().Device})
	if isFinal(j.Status) { // cancelled before the runner started
		s.mu.Unlock()
		return
	}
	if queued {
		s.saveLocked(j)
	}
	s.mu.Unlock()

	if lockThreadForChild {
		// The parent-death signal is tied to the thread that forks; keep it
		// alive until the runner has exited. The thread ends with us.
		runtime.LockOSThread()
	}
	code, waitErr := s.runProcess(j)
	rec, recErr := readRecord(j.dir)
	var histErr error
	if recErr == nil {
		if rec.ID == "" {
			rec.ID = j.ID
		}
		histErr = s.keepRecord(j, rec)
	}
	// Free the GPU before the final status, so whoever sees the job end
	// finds the lease passed on.
	j.ticket.Release()

	s.mu.Lock()
	defer s.mu.Unlock()
	s.applyLocked(j, settled{code: code, err: waitErr, rec: rec, recErr: recErr, histErr: histErr, grace: s.opts.Grace})
}

// runProcess starts the runner under a supervisor, streams its output into
// the job and waits for it: code is the supervisor's (-1 when it did not
// start, with err saying why).
func (s *Service) runProcess(j *job) (code int, err error) {
	argv := append(append([]string{}, s.opts.Runner...),
		"--plan", j.dir+string(os.PathSeparator)+planFile, "--out", j.dir, "--id", j.ID, "--profile", j.Profile)
	sup := newSupervisor(argv, append(os.Environ(), s.opts.Env...), j.dir, s.opts.Clock, s.opts.Grace,
		func(text string, stdout bool) { s.line(j, text, stdout) })

	s.mu.Lock()
	if err := sup.start(); err != nil {
		s.applyLocked(j, note{"could not start the runner: " + redact.Message(err)})
		s.applyLocked(j, exited{})
		s.mu.Unlock()
		return -1, err
	}
	j.sup = sup
	p, err := sup.proc()
	if err != nil {
		s.opts.Logger.Warn(fmt.Sprintf("jobs: %s: runner start time: %v", j.ID, err), logkey.Job, j.ID)
	}
	s.applyLocked(j, spawned{p})
	s.saveLocked(j)
	if j.cancelled {
		s.terminateLocked(j)
	}
	s.mu.Unlock()

	code, err = sup.wait()
	s.mu.Lock()
	s.applyLocked(j, exited{})
	s.mu.Unlock()
	return code, err
}

// terminateLocked has the supervisor stop the runner; SIGKILL, after the
// grace period, is recorded first, unless the runner has exited by then.
func (s *Service) terminateLocked(j *job) {
	err := j.sup.terminate(func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.applyLocked(j, graceOver{grace: s.opts.Grace})
		return j.killed
	})
	if err != nil {
		s.applyLocked(j, note{"SIGTERM: " + err.Error()})
	}
}

// line takes one line of the runner's output; a new cell is saved, so
// job.json shows where the run is.
func (s *Service) line(j *job, text string, stdout bool) {
	in := runnerLine(text, stdout)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applyLocked(j, in)
	if in.kind == lineCell {
		s.saveLocked(j)
	}
}

// planPhases is the measurement phases the runner takes in each cell of
// plan, in order.
func planPhases(plan bench.Plan) []string { return plan.Phases.Names() }

// keepRecord hands a run's record to history; a failure to keep it is a
// problem of the job, and returned, since it fails the job (the record
// itself stays in the run directory).
func (s *Service) keepRecord(j *job, rec bench.RunRecord) error {
	if s.opts.Finished == nil {
		return nil
	}
	err := s.opts.Finished(rec, j.dir)
	if err != nil {
		s.opts.Logger.Error(fmt.Sprintf("jobs: %s: history: %v", j.ID, err), logkey.Job, j.ID)
		s.mu.Lock()
		s.applyLocked(j, problem{"history: " + redact.Message(err)})
		s.mu.Unlock()
	}
	return err
}
