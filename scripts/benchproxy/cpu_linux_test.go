package main

import (
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// TestCPUTimeCountsEveryThread: cpuTime reads a process's CPU from
// /proc/PID/stat, which sums all its threads; a peer such as Caddy spends
// its CPU in many. A thread other than the main one burns 200 ms of CPU,
// and the process's figure grows by that much, while the main thread's own
// (/proc/PID/task/PID/stat) does not.
func TestCPUTimeCountsEveryThread(t *testing.T) {
	pid := os.Getpid()
	before, mainBefore := cpuTime(pid), threadCPU(t, pid, pid)
	// A goroutine that finds itself on the main thread holds it, so that
	// the next one runs on another.
	release := make(chan struct{})
	defer close(release)
	var burnt time.Duration
	for burnt == 0 {
		done := make(chan time.Duration)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			if syscall.Gettid() == pid {
				done <- 0
				<-release
				return
			}
			done <- burn(200 * time.Millisecond)
		}()
		burnt = <-done
	}
	if burnt < 0 {
		t.Fatal("getrusage(RUSAGE_THREAD) failed")
	}
	grew, mainGrew := cpuTime(pid)-before, threadCPU(t, pid, pid)-mainBefore
	if grew < burnt-20*time.Millisecond {
		t.Errorf("the process's CPU grew %v while one of its threads burnt %v", grew, burnt)
	}
	if mainGrew >= burnt {
		t.Errorf("the main thread's own CPU grew %v: the burning thread was not another one", mainGrew)
	}
}

// burn spins until the calling thread has used d more CPU, and returns how
// much more it used, or -1 when it cannot tell.
func burn(d time.Duration) time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru) != nil {
		return -1
	}
	start := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	for {
		x := 0
		for i := range 1_000_000 {
			x += i
		}
		_ = x
		if syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru) != nil {
			return -1
		}
		if used := time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) - start; used >= d {
			return used
		}
	}
}

// threadCPU is one thread's utime+stime, from /proc/PID/task/TID/stat.
func threadCPU(t *testing.T, pid, tid int) time.Duration {
	t.Helper()
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		t.Fatal(err)
	}
	p, err := fs.Thread(pid, tid)
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(st.CPUTime() * float64(time.Second))
}
