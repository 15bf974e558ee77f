package e2e

import (
	"os/exec"
	"syscall"
)

// dieWithTest makes the kernel kill cmd when the test binary dies, so a
// test killed by its -timeout leaves no backend running. The signal is tied
// to the thread that starts cmd; Go ends no thread that a goroutine has not
// locked, so that thread lives as long as the test binary.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
