package prom

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// requireToolsEnv is set to 1 by scripts/test: there a test whose external
// tool is missing fails, so a check that never ran cannot pass unnoticed.
const requireToolsEnv = "MLX_METRICS_REQUIRE_TOOLS"

// lookTool returns the path of an external tool the test needs. Where it is
// missing the test skips, or fails when requireToolsEnv is 1.
func lookTool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	switch {
	case err == nil:
		return path
	case os.Getenv(requireToolsEnv) == "1":
		t.Fatalf("%s not installed (scripts/setup installs it) and %s=1", name, requireToolsEnv)
	default:
		t.Skipf("%s not installed (scripts/setup installs it)", name)
	}
	return ""
}

// verdictTB records what lookTool decided instead of ending the test.
type verdictTB struct {
	testing.TB
	failed, skipped bool
}

func (v *verdictTB) Helper()               {}
func (v *verdictTB) Fatalf(string, ...any) { v.failed = true }
func (v *verdictTB) Skipf(string, ...any)  { v.skipped = true }

func TestLookTool(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "present"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, tool, require string
		wantPath            bool
		wantFail, wantSkip  bool
	}{
		{"installed", "present", "", true, false, false},
		{"installed, required", "present", "1", true, false, false},
		{"missing", "absent", "", false, false, true},
		{"missing, required", "absent", "1", false, true, false},
		{"missing, not 1", "absent", "0", false, false, true},
	}
	t.Setenv("PATH", dir)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(requireToolsEnv, tt.require)
			v := &verdictTB{TB: t}
			path := lookTool(v, tt.tool)
			if (path != "") != tt.wantPath || v.failed != tt.wantFail || v.skipped != tt.wantSkip {
				t.Errorf("path %q, failed %v, skipped %v; want a path %v, failed %v, skipped %v",
					path, v.failed, v.skipped, tt.wantPath, tt.wantFail, tt.wantSkip)
			}
		})
	}
}
