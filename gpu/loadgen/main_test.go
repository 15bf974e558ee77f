package loadgen

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

// TestMain doubles as the reference engine ("engine …"), so a benchmark
// can measure against it in another process, as a real server runs.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "engine" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		err := engine.Command(ctx, os.Args[2:], os.Stderr)
		stop()
		var ue *engine.UsageError
		switch {
		case errors.As(err, &ue):
			fmt.Fprintln(os.Stderr, "engine:", err)
			os.Exit(2)
		case err != nil:
			fmt.Fprintln(os.Stderr, "engine:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
