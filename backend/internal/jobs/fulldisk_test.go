package jobs

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// TestFinalSaveFullDisk: when the disk is full as a job ends, its failure
// says so (not "the backend stopped during the run"), and Close writes that
// once the disk has room, so a restart says it too.
func TestFinalSaveFullDisk(t *testing.T) {
	tests := []struct {
		script    string
		afterwith string // what the job would have said
	}{
		{"ok", "complete: 2 measured"},
		{"incomplete", "the run is incomplete"},
		{"crash", "exited with code 3"},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			dir := t.TempDir()
			h := newHarness(t, dir, 0)
			var mu sync.Mutex
			full := true
			h.svc.writeJSON = func(path string, v any) error {
				mu.Lock()
				defer mu.Unlock()
				if dj, ok := v.(diskJob); ok && full && isFinal(dj.Status) {
					return &fs.PathError{Op: "open", Path: path + ".tmp", Err: syscall.ENOSPC}
				}
				return writeJSON(path, v)
			}
			j := h.done(h.submit(tt.script).ID)
			for _, s := range []string{"no space left on device", tt.afterwith} {
				if j.Status != bench.StatusFailed || !strings.Contains(j.Error, s) {
					t.Fatalf("job = %+v, want failed with %q", j, s)
				}
			}
			if strings.Contains(j.Error, dir) || strings.Contains(j.Error, MsgStoppedDuringRun) {
				t.Fatalf("error = %q", j.Error)
			}
			var dj diskJob
			readJSON(filepath.Join(dir, j.ID, jobFile), &dj)
			if isFinal(dj.Status) {
				t.Fatalf("job.json = %+v, want the last state before the failed save", dj.Job)
			}
			mu.Lock()
			full = false
			mu.Unlock()
			if err := h.svc.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			after := newHarness(t, dir, 0)
			if got, _ := after.svc.Get(j.ID); got.Error != j.Error {
				t.Fatalf("after restart: %s, want %s", got.Error, j.Error)
			}
		})
	}
}
