package jobs

import (
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"github.com/prometheus/procfs"
)

// isolate puts the runner in its own process group, so that SIGKILL after
// the grace period reaches what it started in that group, and asks the
// kernel to SIGTERM it if the backend dies, so an orphaned runner does not
// keep the GPU. Pdeathsig follows the thread that started the child: the
// caller keeps that thread locked until the runner exits.
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

const lockThreadForChild = true

// killGroup sends SIGKILL to the runner's process group and to the groups
// its children lead: the runner starts each server in a group of its own,
// and a runner that ignored SIGTERM has not stopped them.
func killGroup(pid int) error {
	for _, child := range children(pid) {
		syscall.Kill(-child, syscall.SIGKILL)
		syscall.Kill(child, syscall.SIGKILL)
	}
	return syscall.Kill(-pid, syscall.SIGKILL)
}

// procFS is /proc, read with prometheus/procfs.
var procFS = sync.OnceValues(procfs.NewDefaultFS)

// procStat is /proc/<pid>/stat.
func procStat(pid int) (procfs.ProcStat, error) {
	fs, err := procFS()
	if err != nil {
		return procfs.ProcStat{}, err
	}
	p, err := fs.Proc(pid)
	if err != nil {
		return procfs.ProcStat{}, err
	}
	return p.Stat()
}

// procStart is pid's start time in clock ticks since boot, which stays the
// same for the process's life and differs for a later process given the
// same pid.
func procStart(pid int) (string, error) {
	s, err := procStat(pid)
	if err != nil {
		return "", err
	}
	return strconv.FormatUint(s.Starttime, 10), nil
}

// running reports whether p is still the process it was and has not
// exited (a zombie waiting for its reaper has).
func running(p runnerProc) bool {
	s, err := procStat(p.Pid)
	return err == nil && s.State != "Z" && strconv.FormatUint(s.Starttime, 10) == p.Start
}

// children lists the processes whose parent is pid, from /proc.
func children(pid int) []int {
	fs, err := procFS()
	if err != nil {
		return nil
	}
	procs, _ := fs.AllProcs()
	var out []int
	for _, p := range procs {
		if s, err := p.Stat(); err == nil && s.PPID == pid { // else gone meanwhile
			out = append(out, p.PID)
		}
	}
	return out
}
