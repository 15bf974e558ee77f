package homelock

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// One holder at a time; the second is told who holds the home; a released
// home can be taken again.
func TestAcquire(t *testing.T) {
	home := t.TempDir()
	a, err := Acquire(home, "serve")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.SetAddr("127.0.0.1:7878"); err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(home, "serve")
	var inUse *InUseError
	if !errors.As(err, &inUse) {
		t.Fatalf("second Acquire: %v, want *InUseError", err)
	}
	if inUse.Other.PID != os.Getpid() || inUse.Other.Addr != "127.0.0.1:7878" || inUse.Other.Command != "serve" {
		t.Fatalf("other = %+v", inUse.Other)
	}
	msg := err.Error()
	for _, want := range []string{"is in use by mlx-metrics serve (pid ", "http://127.0.0.1:7878", "--home"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("message is more than a line: %q", msg)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	b, err := Acquire(home, "bench run")
	if err != nil {
		t.Fatalf("after Release: %v", err)
	}
	b.Release()
}

// A holder killed with -9 leaves the file but not the lock.
func TestKilledHolderReleases(t *testing.T) {
	if os.Getenv("HOMELOCK_HOLD") != "" {
		if _, err := Acquire(os.Getenv("HOMELOCK_HOLD"), "serve"); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("held\n")
		// Blocked in a read until killed: a goroutine in a syscall keeps
		// the runtime from calling the wait a deadlock.
		io.Copy(io.Discard, os.Stdin)
		os.Exit(4)
	}
	home := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledHolderReleases$")
	cmd.Env = append(os.Environ(), "HOMELOCK_HOLD="+home)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.StdinPipe(); err != nil { // left open: the holder waits on it
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	buf := make([]byte, 5)
	if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "held\n" {
		t.Fatalf("holder: %q %v", buf, err)
	}
	var inUse *InUseError
	if _, err := Acquire(home, "serve"); !errors.As(err, &inUse) || inUse.Other.PID != cmd.Process.Pid {
		t.Fatalf("while held: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait() // a second Kill and Wait at cleanup are no-ops
	l, err := Acquire(home, "serve")
	if err != nil {
		t.Fatalf("after kill -9: %v", err)
	}
	l.Release()
	if _, err := os.Stat(filepath.Join(home, "metrics", "home.lock")); err != nil {
		t.Fatal(err)
	}
}

// A lock file another process left unreadable or huge still gives a
// one-line error.
func TestGarbledOwner(t *testing.T) {
	home := t.TempDir()
	a, err := Acquire(home, "serve")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	os.WriteFile(filepath.Join(home, "metrics", "home.lock"), []byte(strings.Repeat("\x00{", 1<<20)), 0o644)
	_, err = Acquire(home, "serve")
	if err == nil || !strings.Contains(err.Error(), "in use by another mlx-metrics process") || len(err.Error()) > 300 {
		t.Fatalf("err = %v", err)
	}
}

// A holder caught mid-write (its new record over a longer old one not yet
// cut) is still named.
func TestOwnerMidWrite(t *testing.T) {
	home := t.TempDir()
	a, err := Acquire(home, "serve")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	os.WriteFile(filepath.Join(home, "metrics", "home.lock"),
		[]byte(`{"pid":42,"command":"serve","addr":"127.0.0.1:7878"}`+"\n"+`:"127.0.0.1:7878","since":"2026-12-06T18:00:00Z"}`+"\n"), 0o644)
	var inUse *InUseError
	if _, err := Acquire(home, "serve"); !errors.As(err, &inUse) || inUse.Other.PID != 42 || inUse.Other.Addr != "127.0.0.1:7878" {
		t.Fatalf("err = %v", err)
	}
}
