package ingest

import (
	"testing"

	"github.com/mlx-bun/mlx-metrics/backend/internal/leaktest"
)

// TestMain fails the package's tests when a goroutine they started is
// still running at their end.
func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }
