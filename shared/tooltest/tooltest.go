// Package tooltest finds the external tools some tests run (promtool, a
// Prometheus server, curl). Where one is missing the test skips, saying
// why, or fails when MLX_METRICS_REQUIRE_TOOLS=1, as scripts/test sets it:
// there a check that never ran cannot pass unnoticed.
package tooltest

import (
	"os"
	"os/exec"
	"testing"
)

// RequireEnv is set to 1 by scripts/test.
const RequireEnv = "MLX_METRICS_REQUIRE_TOOLS"

// Look returns the path of the tool name on PATH; where it is missing the
// test skips, or fails when RequireEnv is 1.
func Look(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	switch {
	case err == nil:
		return path
	case os.Getenv(RequireEnv) == "1":
		t.Fatalf("%s not installed (scripts/setup installs it) and %s=1", name, RequireEnv)
	default:
		t.Skipf("%s not installed (scripts/setup installs it)", name)
	}
	return ""
}
