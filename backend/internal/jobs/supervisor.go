package jobs

import (
	"os/exec"
	"syscall"
	"time"
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
	clock          Clock
	grace          time.Duration
	exited         chan struct{} // closed once wait has its status
}

// newSupervisor prepares argv to run in dir with env; out gets each line
// the process writes, from one goroutine per stream.
func newSupervisor(argv, env []string, dir string, clock Clock, grace time.Duration, out func(text string, stdout bool)) *supervisor {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	isolate(cmd)
	p := &supervisor{cmd: cmd, clock: clock, grace: grace, exited: make(chan struct{}),
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
