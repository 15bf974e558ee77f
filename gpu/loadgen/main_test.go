package loadgen

import (
	"os"
	"testing"

	"github.com/mlx-bun/mlx-metrics/gpu/engine/enginetest"
)

// TestMain doubles as the reference engine ("engine …"), so a benchmark
// can measure against it in another process, as a real server runs.
func TestMain(m *testing.M) {
	enginetest.ServeIfAsked()
	os.Exit(m.Run())
}
