// Package enginetest runs the reference engine for tests: in the test's
// process until the test ends (Run), or as a process of its own, as a
// real server runs, by a test binary that doubles as the engine
// (ServeIfAsked).
package enginetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	"github.com/mlx-bun/mlx-metrics/gpu/engine"
)

// ServeIfAsked serves the reference engine until SIGTERM or an interrupt
// and exits, when the process was started as "<binary> engine [flags]"
// (exit status 2 for bad flags, as `mlx-metrics engine`); otherwise it
// returns at once. Call it first in TestMain.
func ServeIfAsked() {
	if len(os.Args) < 2 || os.Args[1] != "engine" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := engine.Command(ctx, os.Args[2:], os.Stderr)
	stop()
	if err == nil {
		os.Exit(0)
	}
	fmt.Fprintln(os.Stderr, "engine:", err)
	var ue *engine.UsageError
	if errors.As(err, &ue) {
		os.Exit(2)
	}
	os.Exit(1)
}

// Run starts an engine of cfg and o that runs until tb ends; serve its
// Handler. Cleanups registered after Run (a server in front of it) run
// before the engine stops.
func Run(tb testing.TB, cfg engine.Config, o engine.Options) *engine.Engine {
	tb.Helper()
	e, err := engine.New(cfg, o)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	tb.Cleanup(func() { cancel(); <-done })
	return e
}

// Spawn starts this test binary as the reference engine, a process of its
// own (the binary's TestMain calls ServeIfAsked), with flags, on a port it
// picks itself, and returns its base URL ("http://127.0.0.1:PORT") once it
// said where it serves; the engine is stopped when tb ends. With cpus
// ("0", "0-1") the engine runs pinned to those CPUs (taskset), so that a
// benchmark pinned elsewhere measures its client alone.
func Spawn(tb testing.TB, cpus string, flags ...string) string {
	tb.Helper()
	args := append([]string{os.Args[0], "engine", "--port", "0"}, flags...)
	if cpus != "" {
		args = append([]string{"taskset", "-c", cpus}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	// The engine's first line names its address; the rest of its log is
	// passed on (to the test's stderr when verbose), never left to block it,
	// and read to its end before Wait, which closes the pipe.
	sc := bufio.NewScanner(stderr)
	url := ""
	for url == "" && sc.Scan() {
		if _, after, ok := strings.Cut(sc.Text(), " on http://"); ok {
			url = "http://" + strings.TrimSuffix(after, "/v1")
		}
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		for sc.Scan() {
			if testing.Verbose() {
				fmt.Fprintln(os.Stderr, sc.Text())
			}
		}
	}()
	tb.Cleanup(func() { cmd.Process.Signal(os.Interrupt); <-read; cmd.Wait() })
	if url == "" {
		tb.Fatalf("the engine (%s) ended before it said where it serves", strings.Join(args, " "))
	}
	return url
}
