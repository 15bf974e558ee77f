// Package enginetest runs the reference engine for tests: in the test's
// process until the test ends (Run), or as a process of its own, as a
// real server runs, by a test binary that doubles as the engine
// (ServeIfAsked).
package enginetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
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
