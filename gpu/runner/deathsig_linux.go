package runner

import "syscall"

// dieWithRunner has the kernel kill the server if the runner dies without
// stopping it (a SIGKILL after the backend's grace period).
func dieWithRunner(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
