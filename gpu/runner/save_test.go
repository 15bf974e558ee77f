package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

func TestWriteAtomic(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string) // before the write
		path    func(dir string) string
		errHas  string
	}{
		{"new file", nil, nil, ""},
		{"replaces the old file", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "run.json"), []byte("old and longer than the new"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, nil, ""},
		// The temporary file is its own: a link left at the old fixed name
		// (run.json.tmp) by a crash or by someone else is never followed.
		{"a link at the old temp name", func(t *testing.T, dir string) {
			victim := filepath.Join(dir, "victim")
			if err := os.WriteFile(victim, []byte("untouched"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, filepath.Join(dir, "run.json.tmp")); err != nil {
				t.Fatal(err)
			}
		}, nil, ""},
		{"no such directory", nil, func(dir string) string { return filepath.Join(dir, "gone", "run.json") }, "save run.json: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.prepare != nil {
				tt.prepare(t, dir)
			}
			path := filepath.Join(dir, "run.json")
			if tt.path != nil {
				path = tt.path(dir)
			}
			err := writeAtomic(path, []byte("new"))
			if tt.errHas != "" {
				if want := strings.ReplaceAll(tt.errHas, "DIR", dir); err == nil || err.Error() != want {
					t.Fatalf("err = %v, want %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil || string(b) != "new" {
				t.Fatalf("read %q, %v", b, err)
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
				t.Errorf("mode %v, want 0644", fi.Mode().Perm())
			}
			if b, err := os.ReadFile(filepath.Join(dir, "victim")); err == nil && string(b) != "untouched" {
				t.Errorf("the write followed a planted link: victim holds %q", b)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".run.json.*")); len(left) != 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}

// A full disk at the final save is the run's failure, said plainly: Run
// returns an error that is ENOSPC and reads "no space left on device",
// naming the file, and no run.json is left to say otherwise.
func TestSaveFailureIsTheRunsFailure(t *testing.T) {
	tests := []struct {
		name, failOn string
	}{
		{"run.json", "run.json"},
		{"report.md (before run.json)", "report.md"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			saveFile = func(path string, b []byte) error {
				if filepath.Base(path) == tt.failOn {
					return saveErr(path, &os.PathError{Op: "write", Path: path + ".123.tmp", Err: syscall.ENOSPC})
				}
				return writeAtomic(path, b)
			}
			t.Cleanup(func() { saveFile = writeAtomic })
			skipped := engineCell(bench.KindTree, "skipped")
			skipped.Skip = "nothing to measure"
			dir := t.TempDir()
			_, err := Run(context.Background(), Options{Plan: bench.Plan{Scope: bench.ScopeAll, Cells: []bench.Cell{skipped}}, OutDir: dir})
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("err = %v, want ENOSPC", err)
			}
			if want := "the run's record could not be saved: save " + tt.failOn + ": no space left on device"; err.Error() != want {
				t.Errorf("err = %q, want %q", err, want)
			}
			if _, err := os.Stat(filepath.Join(dir, "run.json")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("run.json exists after a failed save (%v)", err)
			}
		})
	}
}

// A run directory that cannot take the logs fails plainly, naming files
// relative to the run directory and never the directory's own path.
func TestRunDirectoryFaults(t *testing.T) {
	cell := engineCell(bench.KindTree, "x", "--load-ms", "0")
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string)
		errWant string // Run's error; empty: the cell fails instead
		noteHas string
	}{
		{"logs is a file", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "logs"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "the run directory could not be made: mkdir logs: not a directory", ""},
		{"a log cannot be created", func(t *testing.T, dir string) {
			if err := os.MkdirAll(filepath.Join(dir, "logs", "01-reference-sim_tree_x.stdout.log"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "", "start: create logs/01-reference-sim_tree_x.stdout.log: is a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.prepare(t, dir)
			rec, err := Run(context.Background(), Options{Plan: bench.Plan{Scope: bench.ScopeAll, Cells: []bench.Cell{cell}}, OutDir: dir, Self: os.Args[0]})
			if tt.errWant != "" {
				if err == nil || err.Error() != tt.errWant {
					t.Fatalf("err = %v, want %q", err, tt.errWant)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := rec.Cells[0]
			if c.Status != bench.CellFailed || c.Note != tt.noteHas || strings.Contains(strings.Join(c.Problems, " "), dir) {
				t.Errorf("cell %s %q problems %q, want failed with %q and no path", c.Status, c.Note, c.Problems, tt.noteHas)
			}
		})
	}
}
