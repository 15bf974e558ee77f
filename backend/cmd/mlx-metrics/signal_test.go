package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// stuckStopEnv makes the test binary a command whose stop never ends.
const stuckStopEnv = "MLX_METRICS_TEST_STUCK_STOP"

// stuckStop takes signals as main does, says when the first came, and then
// waits for ever, as a shutdown held by a runner that ignores SIGTERM would.
func stuckStop() {
	ctx, _ := signalContext()
	fmt.Println("ready")
	<-ctx.Done()
	fmt.Println("stopping")
	select {}
}

// The first interrupt asks for a stop in good order; a second ends the
// process at once, even while that stop waits.
func TestSecondInterruptStopsAtOnce(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), stuckStopEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	safeguard := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() }) // against a hang
	defer safeguard.Stop()
	lines := bufio.NewScanner(out)
	expect := func(want string) {
		t.Helper()
		if !lines.Scan() || lines.Text() != want {
			t.Fatalf("read %q (%v), want %q", lines.Text(), lines.Err(), want)
		}
	}
	expect("ready")
	cmd.Process.Signal(os.Interrupt)
	expect("stopping")
	// The handler is given back just after the context ends; until then a
	// second interrupt is still caught, so send until the process ends.
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()
	for {
		cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-ended:
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("ended with %v, want an exit by the signal", err)
			}
			if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
				t.Fatalf("ended with %v, want killed by SIGINT", err)
			}
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}
