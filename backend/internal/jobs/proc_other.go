//go:build !linux && !windows

package jobs

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
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
func killGroup(pid int) error {
	return syscall.Kill(-pid, syscall.SIGKILL)
}

// procStart is pid's start time as ps(1) prints it, which stays the same
// for the process's life and differs for a later process given the same
// pid (to the second).
func procStart(pid int) (string, error) {
	out, err := exec.Command("ps", "-o", "lstart=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(out))
	if s == "" {
		return "", os.ErrNotExist
	}
	return s, nil
}

// running reports whether p is still the process it was; a zombie counts as
// running here, until its parent (init, for an orphan) reaps it.
func running(p runnerProc) bool {
	s, err := procStart(p.Pid)
	return err == nil && s == p.Start
}
