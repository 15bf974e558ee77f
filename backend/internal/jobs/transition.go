package jobs

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/redact"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/duration"
	"github.com/mlx-bun/mlx-metrics/shared/plural"
)

// jobState is what transition reads and changes: the job as the API shows
// it and what deciding its next state takes. It holds no file, channel or
// process, so a test steps it through every case without running one.
type jobState struct {
	bench.Job
	runner *runnerProc // the runner process while it runs, for job.json
	cells  int         // the plan's cell count, for "cell n/N"
	cell   int         // cells started so far
	// The measurement inside the cell, for progress that moves within it:
	// the plan's phases in the order the runner takes them, the current
	// one's index (-1 before the first) and the share of its runs done.
	phases    []string
	phase     int
	phaseDone float64
	cellKey   string
	cancelled bool // cancel requested
	shutdown  bool // ... by Close, not by a user
	killed    bool // SIGKILL sent after the grace period
	// exited: the runner has exited, and the job settles from its own
	// outcome, which a late cancel must not overwrite.
	exited  bool
	lastErr string // the last line the runner wrote to stderr
}

// input is what happened to a job, for transition.
type input interface{ isInput() }

// The inputs of transition.
type (
	// queuedBehind: Submit found the GPU held by holder.
	queuedBehind struct {
		holder   string
		position int
	}
	// leased: the job holds the GPU lease; its runner has not started.
	leased struct{ device string }
	// spawned: the runner process started.
	spawned struct{ runner runnerProc }
	// outputLine: a line the runner wrote (runnerLine parses it).
	outputLine struct {
		text   string
		stdout bool
		kind   int    // a line* kind
		val    string // parseLine's text
	}
	// problem: a problem of the run found by the backend (history could
	// not keep its record).
	problem struct{ text string }
	// note: a line of the backend's own for the log (a signal it could
	// not send, a runner it could not start).
	note struct{ text string }
	// cancel: a user's cancel, or the backend's shutdown.
	cancel struct {
		shutdown bool
		grace    time.Duration
	}
	// graceOver: the grace period after SIGTERM ended; the runner (an
	// orphan's, after a restart) gets SIGKILL unless it has exited.
	graceOver struct {
		grace  time.Duration
		orphan bool
	}
	// exited: the runner process has exited, or did not start.
	exited struct{}
	// settled: what the runner left: its exit code (-1: none; err says
	// why), its record (or recErr), and history's answer to keeping it.
	settled struct {
		code    int
		err     error
		rec     bench.RunRecord
		recErr  error
		histErr error
		grace   time.Duration
	}
	// saveFailed: the final job.json could not be written.
	saveFailed struct{ err error }
	// recovered: a restart found the job unfinished and no runner of it.
	recovered struct{}
	// orphaned: a restart found the job's runner (pid) still running.
	orphaned struct {
		pid   int
		grace time.Duration
	}
	// orphanGone: that runner has ended; lingered is how long it was
	// still seen after SIGKILL (0: it went).
	orphanGone struct {
		pid      int
		grace    time.Duration
		lingered time.Duration
		noRecord bool // it wrote no run.json
	}
)

func (queuedBehind) isInput() {}
func (leased) isInput()       {}
func (spawned) isInput()      {}
func (outputLine) isInput()   {}
func (problem) isInput()      {}
func (note) isInput()         {}
func (cancel) isInput()       {}
func (graceOver) isInput()    {}
func (exited) isInput()       {}
func (settled) isInput()      {}
func (saveFailed) isInput()   {}
func (recovered) isInput()    {}
func (orphaned) isInput()     {}
func (orphanGone) isInput()   {}

// runnerLine parses a line of the runner's output for transition: stdout's
// cell markers, phases, steps and problems; everything else, and all of
// stderr, is log. Absolute paths are taken out first (redact.Paths): the
// job's log tail, events and messages are read by whoever may read the
// job, and the server's paths (the run directory, the plan, the runner's
// and the engine's binaries) are none of their business; the run
// directory's logs/runner.log keeps the lines whole.
func runnerLine(text string, stdout bool) outputLine {
	text = redact.Paths(text)
	kind, val := lineLog, text
	if stdout {
		kind, val = parseLine(text)
	}
	return outputLine{text: text, stdout: stdout, kind: kind, val: val}
}

// transition is a job's next state after in, at now, and the events that
// say so (their seq is the log's to give). It does no I/O and does not
// change j's slices. A final job does not change again, but for saveFailed:
// its events replace those of the step that ended the job, whose job.json
// could not be written. A step that ends a job returns one event, the
// final one.
func transition(j jobState, now time.Time, in input) (jobState, []bench.JobEvent) {
	if _, ok := in.(saveFailed); isFinal(j.Status) && !ok {
		return j, nil
	}
	var evs []bench.JobEvent
	emit := func(typ, msg string, progress *float64) {
		evs = append(evs, bench.JobEvent{At: now.UnixMilli(), Type: typ, Message: msg, Progress: progress})
	}
	finish := func(status bench.JobStatus, msg string) {
		j.finish(now, status, msg)
		p := j.Progress
		emit(finalEvent(status), msg, &p)
	}
	switch in := in.(type) {
	case queuedBehind:
		if j.Status == bench.StatusQueued {
			emit(bench.EventLog, fmt.Sprintf("queued for the GPU behind %s (position %d)", in.holder, in.position), nil)
		}
	case leased:
		switch {
		case j.Status == bench.StatusQueued:
			j.Status = bench.StatusRunning
			j.StartedAt = now.UnixMilli()
			j.Stage = "starting"
			j.Message = leasedMessage(in.device)
			zero := 0.0
			emit(bench.EventStarted, j.Message, &zero)
		case j.cancelled && j.shutdown:
			finish(bench.StatusFailed, MsgStoppedDuringRun)
		case j.cancelled:
			finish(bench.StatusCancelled, "cancelled before the runner started")
		}
	case spawned:
		r := in.runner
		j.runner = &r
		j.Stage = "running"
		j.Message = fmt.Sprintf("runner pid %d", r.Pid)
	case outputLine:
		j.line(in, emit)
	case problem:
		j.addProblem(in.text)
		emit(bench.EventLog, "problem: "+in.text, nil)
	case note:
		emit(bench.EventLog, in.text, nil)
	case cancel:
		switch {
		case j.Status == bench.StatusQueued:
			j.cancelled, j.shutdown = true, in.shutdown
			if in.shutdown {
				finish(bench.StatusFailed, MsgStoppedQueued)
			} else {
				finish(bench.StatusCancelled, "cancelled while queued")
			}
		case j.Status == bench.StatusRunning && !j.cancelled && !j.exited:
			j.cancelled, j.shutdown = true, in.shutdown
			j.Stage = "cancelling"
			why := "cancelling"
			if in.shutdown {
				why = "the backend is stopping"
			}
			emit(bench.EventStage, fmt.Sprintf("%s: SIGTERM to the runner, SIGKILL after %s", why, duration.Of(in.grace)), nil)
		}
	case graceOver:
		if !j.exited {
			j.killed = true
			who := "the runner"
			if in.orphan {
				who = "the orphaned runner"
			}
			emit(bench.EventLog, fmt.Sprintf("%s ignored SIGTERM for %s: SIGKILL to its process group", who, duration.Of(in.grace)), nil)
		}
	case exited:
		j.exited, j.runner = true, nil
	case settled:
		status, msg := j.settle(in)
		finish(status, msg)
	case saveFailed:
		// job.json still says the job runs, and a restart would say the
		// backend stopped during it: the job failed here, for want of
		// disk (ENOSPC, most likely). Say so.
		j.Status, j.Stage = bench.StatusFailed, string(bench.StatusFailed)
		j.Message = fmt.Sprintf("could not save the job's final state (%s); the run had ended: %s", redact.Message(in.err), j.Message)
		j.Error = j.Message
		p := j.Progress
		emit(bench.EventFailed, j.Message, &p)
	case recovered:
		msg := MsgStoppedDuringRun
		if j.Status == bench.StatusQueued {
			msg = MsgStoppedQueued
		}
		j.exited = true
		finish(bench.StatusFailed, msg)
	case orphaned:
		j.Stage = "recovering"
		j.Message = fmt.Sprintf("the backend restarted while runner pid %d ran: stopping it before the GPU is free", in.pid)
		emit(bench.EventStage, fmt.Sprintf("%s (SIGTERM to its process group, SIGKILL after %s)", j.Message, duration.Of(in.grace)), nil)
	case orphanGone:
		how := "it stopped on SIGTERM"
		if j.killed {
			how = fmt.Sprintf("it was killed after ignoring SIGTERM for %s", duration.Of(in.grace))
			if in.lingered > 0 {
				how += fmt.Sprintf(", and was still there %s later", duration.Of(in.lingered))
			}
		}
		msg := fmt.Sprintf("%s; its runner (pid %d) still ran at restart and held the GPU until it ended: %s", MsgStoppedDuringRun, in.pid, how)
		if in.noRecord {
			msg += "; it wrote no run.json"
		}
		j.exited, j.runner = true, nil
		finish(bench.StatusFailed, msg)
	}
	return j, evs
}

// finish gives the job its final status.
func (j *jobState) finish(now time.Time, status bench.JobStatus, msg string) {
	j.Status = status
	j.FinishedAt = now.UnixMilli()
	j.Stage = string(status)
	j.Message = msg
	switch status {
	case bench.StatusDone:
		j.Progress = 1
	default:
		j.Error = msg
	}
}

func finalEvent(status bench.JobStatus) string {
	switch status {
	case bench.StatusDone:
		return bench.EventDone
	case bench.StatusCancelled:
		return bench.EventCancelled
	}
	return bench.EventFailed
}

// settle is the final status and message of a job from its runner's
// outcome (and its record's problems become the job's).
func (j *jobState) settle(in settled) (status bench.JobStatus, msg string) {
	code := in.code
	j.ExitCode = &code
	rec, recErr := in.rec, in.recErr
	if recErr == nil {
		for _, p := range rec.Problems {
			j.addProblem(p)
		}
	}
	switch {
	case j.cancelled:
		status, msg = bench.StatusCancelled, "cancelled"
		if j.shutdown {
			status, msg = bench.StatusFailed, MsgStoppedDuringRun
		}
		if j.killed {
			msg += fmt.Sprintf("; the runner did not stop within %s of SIGTERM and was killed", duration.Of(in.grace))
		}
		if recErr != nil {
			msg += "; it wrote no run.json"
		}
		return status, msg
	case in.err != nil && code < 0:
		return bench.StatusFailed, "could not run the runner: " + redact.Message(in.err)
	case code == 2 && recErr != nil:
		return bench.StatusFailed, withLast("the runner refused the plan (exit 2)", j.lastErr)
	case recErr != nil:
		return bench.StatusFailed, withLast(fmt.Sprintf("the runner exited with code %d and wrote no readable run.json (%v)", code, shortErr(recErr)), j.lastErr)
	case code == 0 && rec.Complete && in.histErr == nil:
		return bench.StatusDone, fmt.Sprintf("complete: %s", cellSummary(rec))
	case code == 0 && rec.Complete:
		return bench.StatusFailed, fmt.Sprintf("complete (%s), but history could not keep it (%s); the record stays in the run's %s",
			cellSummary(rec), redact.Message(in.histErr), recordFile)
	default:
		msg := fmt.Sprintf("the run is incomplete (exit %d): %s", code, cellSummary(rec))
		if len(j.Problems) > 0 {
			msg += "; first problem: " + j.Problems[0]
		}
		return bench.StatusFailed, msg
	}
}

// line takes one line of the runner's output: cell markers become stages
// with progress, phase and step lines move the progress within the cell,
// problem lines become the job's problems, and the rest is log.
func (j *jobState) line(in outputLine, emit func(typ, msg string, progress *float64)) {
	switch in.kind {
	case lineCell:
		j.cell++
		j.cellKey, j.phase, j.phaseDone = in.val, -1, 0
		n, total := j.cell, max(j.cells, j.cell)
		p := float64(n-1) / float64(total)
		j.Progress = p
		j.Stage = fmt.Sprintf("cell %d/%d", n, total)
		j.Message = in.val
		emit(bench.EventStage, j.Stage+": "+in.val, &p)
	case linePhase, lineStep:
		// Progress inside the cell: its phases done, and the runs done of
		// the one running. Logged as well, as every runner line is.
		if in.kind == linePhase {
			if i := slices.Index(j.phases, in.val); i >= 0 && i != j.phase {
				j.phase, j.phaseDone = i, 0
			}
		} else if f, ok := step(in.val); ok {
			j.phaseDone = f
		}
		if j.cell > 0 && j.phase >= 0 && len(j.phases) > 0 {
			total := max(j.cells, j.cell)
			within := (float64(j.phase) + j.phaseDone) / float64(len(j.phases))
			j.Progress = (float64(j.cell-1) + min(within, 1)) / float64(total)
			j.Stage = fmt.Sprintf("cell %d/%d · %s (phase %d/%d)", j.cell, total, j.phases[j.phase], j.phase+1, len(j.phases))
			j.Message = j.cellKey + ": " + in.text
		}
		j.logTail(in.text)
		p := j.Progress
		emit(bench.EventLog, in.text, &p)
	case lineProblem:
		j.addProblem(in.val)
		emit(bench.EventLog, "problem: "+in.val, nil)
	default:
		if !in.stdout && strings.TrimSpace(in.text) != "" {
			j.lastErr = in.text
		}
		j.logTail(in.text)
		emit(bench.EventLog, in.text, nil)
	}
}

// logTail keeps the last logTailLines lines. Clip: appending must not
// write into an array an earlier state shares.
func (j *jobState) logTail(text string) {
	j.LogTail = append(slices.Clip(j.LogTail), text)
	if len(j.LogTail) > logTailLines {
		j.LogTail = j.LogTail[len(j.LogTail)-logTailLines:]
	}
}

func (j *jobState) addProblem(p string) {
	if !slices.Contains(j.Problems, p) {
		j.Problems = append(slices.Clip(j.Problems), p)
	}
}

func cellSummary(rec bench.RunRecord) string {
	n := map[bench.CellStatus]int{}
	for _, c := range rec.Cells {
		n[c.Status]++
	}
	return fmt.Sprintf("%d measured, %d skipped, %d failed of %s",
		n[bench.CellMeasured], n[bench.CellSkipped], n[bench.CellFailed], plural.Count(len(rec.Cells), "cell", "cells"))
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

// leasedMessage says a job took the GPU lease on device (probe's words for
// the GPUs: "NVIDIA H200 (139.8 GiB)", or "no GPU found (…)" on a machine
// without one, where the lease is still taken and the run goes on).
func leasedMessage(device string) string {
	if strings.HasPrefix(device, "no GPU found") {
		return "holds the GPU lease (this machine shows no GPU); starting the runner"
	}
	return "holds the GPU lease on " + device + "; starting the runner"
}
