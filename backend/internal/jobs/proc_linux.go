package jobs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
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
func killGroup(p *os.Process) error {
	for _, child := range children(p.Pid) {
		syscall.Kill(-child, syscall.SIGKILL)
		syscall.Kill(child, syscall.SIGKILL)
	}
	return syscall.Kill(-p.Pid, syscall.SIGKILL)
}

// children lists the processes whose parent is pid, from /proc.
func children(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		fields := bytes.Fields(data[i+1:])
		if len(fields) < 2 {
			continue
		}
		ppid, err := strconv.Atoi(string(fields[1]))
		if err != nil || ppid != pid {
			continue
		}
		if child, err := strconv.Atoi(filepath.Base(filepath.Dir(path))); err == nil {
			out = append(out, child)
		}
	}
	return out
}
