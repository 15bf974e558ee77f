package jobs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/redact"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// pipeDrain bounds how long the backend keeps reading the runner's output
// after it exited, in case a server it started still holds the pipes.
const pipeDrain = 5 * time.Second

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
	if j.Status == bench.StatusQueued {
		s.startLocked(j)
	}
	if j.cancelled {
		j.ticket.Release()
		if j.shutdown {
			s.finishLocked(j, bench.StatusFailed, MsgStoppedDuringRun)
		} else {
			s.finishLocked(j, bench.StatusCancelled, "cancelled before the runner started")
		}
		s.mu.Unlock()
		return
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
	c := code
	j.ExitCode = &c
	if recErr == nil {
		for _, p := range rec.Problems {
			addProblem(&j.Job, p)
		}
	}
	switch {
	case j.cancelled:
		status, msg := bench.StatusCancelled, "cancelled"
		if j.shutdown {
			status, msg = bench.StatusFailed, MsgStoppedDuringRun
		}
		if j.killed {
			msg += fmt.Sprintf("; the runner did not stop within %s of SIGTERM and was killed", s.opts.Grace)
		}
		if recErr != nil {
			msg += "; it wrote no run.json"
		}
		s.finishLocked(j, status, msg)
	case waitErr != nil && code < 0:
		s.finishLocked(j, bench.StatusFailed, "could not run the runner: "+redact.Message(waitErr))
	case code == 2 && recErr != nil:
		s.finishLocked(j, bench.StatusFailed, withLast("the runner refused the plan (exit 2)", j.lastErr))
	case recErr != nil:
		s.finishLocked(j, bench.StatusFailed, withLast(fmt.Sprintf("the runner exited with code %d and wrote no readable run.json (%v)", code, shortErr(recErr)), j.lastErr))
	case code == 0 && rec.Complete && histErr == nil:
		s.finishLocked(j, bench.StatusDone, fmt.Sprintf("complete: %s", cellSummary(rec)))
	case code == 0 && rec.Complete:
		s.finishLocked(j, bench.StatusFailed, fmt.Sprintf("complete (%s), but history could not keep it (%s); the record stays in the run's %s",
			cellSummary(rec), redact.Message(histErr), recordFile))
	default:
		msg := fmt.Sprintf("the run is incomplete (exit %d): %s", code, cellSummary(rec))
		if len(j.Problems) > 0 {
			msg += "; first problem: " + j.Problems[0]
		}
		s.finishLocked(j, bench.StatusFailed, msg)
	}
}

// runProcess starts the runner, streams its output into the job log and
// waits for it. code is its exit status (128+signal when a signal ended it;
// -1 when it did not start).
func (s *Service) runProcess(j *job) (code int, err error) {
	argv := append(append([]string{}, s.opts.Runner...),
		"--plan", j.dir+string(os.PathSeparator)+planFile, "--out", j.dir, "--id", j.ID, "--profile", j.Profile)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = j.dir
	cmd.Env = append(os.Environ(), s.opts.Env...)
	isolate(cmd)
	stdout := &lineWriter{f: func(l string) { s.line(j, l, true) }, max: 64 << 10}
	stderr := &lineWriter{f: func(l string) { s.line(j, l, false) }, max: 64 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = pipeDrain

	s.mu.Lock()
	if err := cmd.Start(); err != nil {
		s.eventLocked(j, bench.EventLog, "could not start the runner: "+redact.Message(err), nil)
		close(j.exited)
		s.mu.Unlock()
		return -1, err
	}
	j.proc = cmd.Process
	// Recorded in job.json for recovery after a crash (see recoverOrphan).
	start, err := procStart(cmd.Process.Pid)
	if err != nil {
		s.opts.Logf("jobs: %s: runner start time: %v", j.ID, err)
	}
	j.runner = &runnerProc{Pid: cmd.Process.Pid, Pgid: cmd.Process.Pid, Start: start}
	j.Stage = "running"
	j.Message = fmt.Sprintf("runner pid %d", cmd.Process.Pid)
	s.saveLocked(j)
	if j.cancelled {
		s.terminateLocked(j)
	}
	s.mu.Unlock()

	err = cmd.Wait()
	stdout.flush()
	stderr.flush()
	s.mu.Lock()
	close(j.exited)
	j.runner = nil
	s.mu.Unlock()
	st := cmd.ProcessState
	if st == nil {
		return -1, err
	}
	// With a state, Wait's error is the exit status itself or the pipes'
	// drain running out (exec.ErrWaitDelay): the code says it all.
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return st.ExitCode(), nil
}

// terminateLocked sends SIGTERM and arms SIGKILL for the whole process group
// after the grace period.
func (s *Service) terminateLocked(j *job) {
	if err := j.proc.Signal(syscall.SIGTERM); err != nil {
		s.eventLocked(j, bench.EventLog, "SIGTERM: "+err.Error(), nil)
	}
	timer, exited, proc := s.opts.Clock.After(s.opts.Grace), j.exited, j.proc
	go func() {
		select {
		case <-exited:
		case <-timer:
			s.mu.Lock()
			select {
			case <-exited:
				s.mu.Unlock()
				return
			default:
			}
			j.killed = true
			s.eventLocked(j, bench.EventLog, fmt.Sprintf("the runner ignored SIGTERM for %s: SIGKILL to its process group", s.opts.Grace), nil)
			s.mu.Unlock()
			if err := killGroup(proc.Pid); err != nil {
				proc.Kill()
			}
		}
	}()
}

// line takes one line of the runner's output: stdout's cell markers become
// stages with progress, problem lines become the job's problems, the rest
// (and all of stderr) is log.
func (s *Service) line(j *job, text string, stdout bool) {
	kind, val := lineLog, text
	if stdout {
		kind, val = parseLine(text)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch kind {
	case lineCell:
		j.cell++
		j.cellKey, j.phase, j.phaseDone = val, -1, 0
		n, total := j.cell, max(j.cells, j.cell)
		p := float64(n-1) / float64(total)
		j.Progress = p
		j.Stage = fmt.Sprintf("cell %d/%d", n, total)
		j.Message = val
		s.eventLocked(j, bench.EventStage, j.Stage+": "+val, &p)
		s.saveLocked(j)
	case linePhase, lineStep:
		// Progress inside the cell: its phases done, and the runs done of
		// the one running. Logged as well, as every runner line is.
		if kind == linePhase {
			if i := slices.Index(j.phases, val); i >= 0 && i != j.phase {
				j.phase, j.phaseDone = i, 0
			}
		} else if f, ok := step(val); ok {
			j.phaseDone = f
		}
		if j.cell > 0 && j.phase >= 0 && len(j.phases) > 0 {
			total := max(j.cells, j.cell)
			within := (float64(j.phase) + j.phaseDone) / float64(len(j.phases))
			j.Progress = (float64(j.cell-1) + min(within, 1)) / float64(total)
			j.Stage = fmt.Sprintf("cell %d/%d · %s (phase %d/%d)", j.cell, total, j.phases[j.phase], j.phase+1, len(j.phases))
			j.Message = j.cellKey + ": " + text
		}
		j.LogTail = append(j.LogTail, text)
		if len(j.LogTail) > logTailLines {
			j.LogTail = j.LogTail[len(j.LogTail)-logTailLines:]
		}
		p := j.Progress
		s.eventLocked(j, bench.EventLog, text, &p)
	case lineProblem:
		addProblem(&j.Job, val)
		s.eventLocked(j, bench.EventLog, "problem: "+val, nil)
	default:
		if !stdout && strings.TrimSpace(text) != "" {
			j.lastErr = text
		}
		j.LogTail = append(j.LogTail, text)
		if len(j.LogTail) > logTailLines {
			j.LogTail = j.LogTail[len(j.LogTail)-logTailLines:]
		}
		s.eventLocked(j, bench.EventLog, text, nil)
	}
}

// planPhases is the measurement phases the runner takes in each cell of
// plan, in its order (gpu/runner's phaseList).
func planPhases(plan bench.Plan) []string {
	ph := []string{bench.PhaseDecode, bench.PhaseColdTTFT, bench.PhaseWarmTTFT}
	if plan.Phases.Defaults().LongContextTokens > 0 {
		ph = append(ph, bench.PhaseLongContext)
	}
	return append(ph, bench.PhaseConcurrent)
}

// keepRecord hands a run's record to history; a failure to keep it is a
// problem of the job, and returned, since it fails the job (the record
// itself stays in the run directory).
func (s *Service) keepRecord(j *job, rec bench.RunRecord) error {
	if s.opts.Finished == nil {
		return nil
	}
	err := s.opts.Finished(rec, j.dir)
	if err != nil {
		s.opts.Logf("jobs: %s: history: %v", j.ID, err)
		msg := "history: " + redact.Message(err)
		s.mu.Lock()
		addProblem(&j.Job, msg)
		s.eventLocked(j, bench.EventLog, "problem: "+msg, nil)
		s.mu.Unlock()
	}
	return err
}

func addProblem(j *bench.Job, p string) {
	for _, q := range j.Problems {
		if q == p {
			return
		}
	}
	j.Problems = append(j.Problems, p)
}

func cellSummary(rec bench.RunRecord) string {
	n := map[string]int{}
	for _, c := range rec.Cells {
		n[c.Status]++
	}
	return fmt.Sprintf("%d measured, %d skipped, %d failed of %d cells",
		n[bench.CellMeasured], n[bench.CellSkipped], n[bench.CellFailed], len(rec.Cells))
}

func withLast(msg, last string) string {
	if last == "" {
		return msg
	}
	return msg + ": " + last
}

func shortErr(err error) string {
	if errors.Is(err, os.ErrNotExist) {
		return "missing"
	}
	return redact.Message(err)
}
