package jobs

import (
	"os"
	"os/exec"
	"syscall"
)

// isolate puts the runner in its own process group, so that SIGKILL after
// the grace period reaches the servers it started too, and asks the kernel
// to SIGTERM it if the backend dies, so an orphaned runner does not keep the
// GPU. Pdeathsig follows the thread that started the child: the caller
// keeps that thread locked until the runner exits.
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

const lockThreadForChild = true

// killGroup sends SIGKILL to the runner's process group.
func killGroup(p *os.Process) error {
	return syscall.Kill(-p.Pid, syscall.SIGKILL)
}
