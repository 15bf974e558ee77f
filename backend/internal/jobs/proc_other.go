//go:build !linux && !windows

package jobs

import (
	"os"
	"os/exec"
	"syscall"
)

// isolate puts the runner in its own process group, so that SIGKILL after
// the grace period reaches the servers it started too. (There is no parent
// death signal outside Linux: a runner orphaned by a crashed backend ends on
// its own when its plan is done.)
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

const lockThreadForChild = false

// killGroup sends SIGKILL to the runner's process group.
func killGroup(p *os.Process) error {
	return syscall.Kill(-p.Pid, syscall.SIGKILL)
}
