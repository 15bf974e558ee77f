package ui

import (
	"os"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/panel/format"
)

func TestMain(m *testing.M) {
	// Times render in the browser's zone; tests pin UTC.
	format.Location = time.UTC
	os.Exit(m.Run())
}
