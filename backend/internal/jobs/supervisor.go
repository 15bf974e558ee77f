package jobs

import (
	"errors"
	"os/exec"
	"syscall"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// pipeDrain bounds how long the backend keeps reading the runner's output
// after it exited, in case a server it started still holds the pipes.
const pipeDrain = 5 * time.Second

// supervisor owns one runner process: it starts it in a process group of
// its own, passes on its output by lines, waits for its exit status, and
// stops it with SIGTERM, then SIGKILL to its group once the grace period
// has passed. It knows nothing of jobs: what a line or a kill means is its
// caller's.
type supervisor struct {
	cmd            *exec.Cmd
	stdout, stderr *lineWriter
	clock          clock.Clock
	grace          time.Duration
	exited         chan struct{} // closed once wait has its status
}

// newSupervisor prepares argv to run in dir with env; out gets each line
// the process writes, from one goroutine per stream.
func newSupervisor(argv, env []string, dir string, clk clock.Clock, grace time.Duration, out func(text string, stdout bool)) *supervisor {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	isolate(cmd)
	p := &supervisor{cmd: cmd, clock: clk, grace: grace, exited: make(chan struct{}),
		stdout: &lineWriter{f: func(l string) { out(l, true) }, max: 64 << 10},
		stderr: &lineWriter{f: func(l string) { out(l, false) }, max: 64 << 10},
	}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	cmd.WaitDelay = pipeDrain
	return p
}

// start starts the process.
func (p *supervisor) start() error { return p.cmd.Start() }

// proc identifies the started process for job.json (see recoverOrphan);
// the error is reading its start time, which leaves Start empty.
func (p *supervisor) proc() (runnerProc, error) {
	pid := p.cmd.Process.Pid
	start, err := procStart(pid)
	return runnerProc{Pid: pid, Pgid: pid, Start: start}, err
}

// pid is the started process's.
func (p *supervisor) pid() int { return p.cmd.Process.Pid }

// wait waits for the started process and passes on its last line. code is
// its exit status: 128+signal when a signal ended it, -1 when it has none.
func (p *supervisor) wait() (code int, err error) {
	err = p.cmd.Wait()
	p.stdout.flush()
	p.stderr.flush()
	close(p.exited)
	st := p.cmd.ProcessState
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

// terminate sends SIGTERM to the started process and arms SIGKILL for its
// process group after the grace period. When the period ends before the
// exit, kill is asked first (it records the kill; false: it is not wanted
// after all). The error is SIGTERM's; the timer is armed regardless.
func (p *supervisor) terminate(kill func() bool) error {
	proc := p.cmd.Process
	err := proc.Signal(syscall.SIGTERM)
	timer := p.clock.After(p.grace)
	go func() {
		select {
		case <-p.exited:
		case <-timer:
			if p.hasExited() || !kill() {
				return
			}
			if err := killGroup(proc.Pid); err != nil {
				proc.Kill()
			}
		}
	}()
	return err
}

func (p *supervisor) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Bounds of recovering an orphaned runner.
const (
	// orphanPoll is how often recovery looks whether an orphaned runner
	// has exited (it is not this process's child: there is no wait(2)).
	orphanPoll = 50 * time.Millisecond
	// orphanKillWait bounds the wait for the kernel to tear down a runner
	// after SIGKILL.
	orphanKillWait = 10 * time.Second
)

// orphan is a runner an earlier backend started and this one adopts after
// a crash: known only by the pid, process group and start time job.json
// keeps. It is not this process's child, so its exit is polled, not waited
// for; otherwise it is stopped as supervisor.terminate stops a child.
type orphan struct {
	proc  runnerProc
	clock clock.Clock
	grace time.Duration
}

// terminate sends SIGTERM to the orphan's process group: the runner stops
// its servers and writes its record. A group already gone is no error.
func (o orphan) terminate() error {
	if err := syscall.Kill(-o.proc.Pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// reap waits for the orphan to exit. When the grace period ends first,
// graceOver is called, then SIGKILL goes to the runner's group and its
// servers' groups, and the kernel gets orphanKillWait to tear them down;
// lingered is that wait when it ran out (0 when the runner exited).
func (o orphan) reap(graceOver func()) (lingered time.Duration) {
	stop := make(chan struct{})
	defer close(stop)
	gone := watchExit(o.proc, stop)
	select {
	case <-gone:
		return 0
	case <-o.clock.After(o.grace):
	}
	graceOver()
	// Checked again just before: a pid that has been reused since must
	// not be killed.
	if running(o.proc) {
		killGroup(o.proc.Pid)
	}
	select {
	case <-gone:
		return 0
	case <-time.After(orphanKillWait):
		return orphanKillWait
	}
}

// watchExit returns a channel closed once p has exited (or stop is closed).
func watchExit(p runnerProc, stop <-chan struct{}) <-chan struct{} {
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		t := time.NewTicker(orphanPoll)
		defer t.Stop()
		for running(p) {
			select {
			case <-t.C:
			case <-stop:
				return
			}
		}
	}()
	return gone
}
