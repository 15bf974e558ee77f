package load

import (
	"os"
	"testing"

	"github.com/mlx-bun/mlx-metrics/gpu/engine/enginetest"
)

// TestMain doubles as the reference engine ("engine …"), so a benchmark
// can measure the client against it in another process
// (BenchmarkClientOpenLoop1000Apart).
func TestMain(m *testing.M) {
	enginetest.ServeIfAsked()
	os.Exit(m.Run())
}
