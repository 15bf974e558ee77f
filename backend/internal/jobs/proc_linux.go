package jobs

import (
	"bytes"
	"fmt"
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
func killGroup(pid int) error {
	for _, child := range children(pid) {
		syscall.Kill(-child, syscall.SIGKILL)
		syscall.Kill(child, syscall.SIGKILL)
	}
	return syscall.Kill(-pid, syscall.SIGKILL)
}

// procStat is the fields of /proc/<pid>/stat after the command name: the
// name may hold spaces and parentheses, so they start after the last ')'.
// fields[0] is the state (field 3), fields[19] the start time (field 22).
func procStat(pid int) ([][]byte, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := bytes.Fields(data[i+1:])
	if len(f) < 20 {
		return nil, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	return f, nil
}

// procStart is pid's start time in clock ticks since boot, which stays the
// same for the process's life and differs for a later process given the
// same pid.
func procStart(pid int) (string, error) {
	f, err := procStat(pid)
	if err != nil {
		return "", err
	}
	return string(f[19]), nil
}

// running reports whether p is still the process it was and has not
// exited (a zombie waiting for its reaper has).
func running(p runnerProc) bool {
	f, err := procStat(p.Pid)
	return err == nil && string(f[0]) != "Z" && string(f[19]) == p.Start
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
