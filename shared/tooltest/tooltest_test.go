package tooltest

import (
	"os"
	"path/filepath"
	"testing"
)

// verdictTB records what Look decided instead of ending the test.
type verdictTB struct {
	testing.TB
	failed, skipped bool
}

func (v *verdictTB) Helper()               {}
func (v *verdictTB) Fatalf(string, ...any) { v.failed = true }
func (v *verdictTB) Skipf(string, ...any)  { v.skipped = true }

func TestLook(t *testing.T) {
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
			t.Setenv(RequireEnv, tt.require)
			v := &verdictTB{TB: t}
			path := Look(v, tt.tool)
			if (path != "") != tt.wantPath || v.failed != tt.wantFail || v.skipped != tt.wantSkip {
				t.Errorf("path %q, failed %v, skipped %v; want a path %v, failed %v, skipped %v",
					path, v.failed, v.skipped, tt.wantPath, tt.wantFail, tt.wantSkip)
			}
		})
	}
}
