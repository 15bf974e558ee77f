package history

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// damagedHome writes n finished runs, each in its run directory (run.json)
// and in the history at dir, closed; it returns the runs directory.
func damagedHome(t *testing.T, dir string, n int) string {
	t.Helper()
	runs := filepath.Join(filepath.Dir(dir), "runs")
	s, err := Open(dir, Options{RunsDir: runs})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		e := entry(i)
		rec := bench.RunRecord{ID: e.ID, Profile: e.Profile, StartedAt: e.StartedAt, FinishedAt: e.FinishedAt, Complete: true}
		runDir := filepath.Join(runs, e.ID)
		data, _ := json.Marshal(rec)
		if err := os.MkdirAll(runDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(runDir, "run.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(bench.Compact(rec, runDir)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return runs
}

// only is the one file of dir matching pattern.
func only(t *testing.T, dir, pattern string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, pattern))
	if len(m) != 1 {
		t.Fatalf("%s: %v, want one", pattern, m)
	}
	return m[0]
}

// flip inverts 8 bytes of path at off (from the end when off < 0).
func flip(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if off < 0 {
		st, _ := f.Stat()
		off += st.Size()
	}
	b := make([]byte, 8)
	f.ReadAt(b, off)
	for i := range b {
		b[i] ^= 0xff
	}
	f.WriteAt(b, off)
}

func cut(t *testing.T, path string, to func(size int64) int64) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, to(st.Size())); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedHistory: whatever the damage to the history's files, Open
// neither panics (Badger's goroutines cannot be recovered) nor opens with
// runs silently gone: every run whose run.json is on disk is in the
// history it opens, and a damage that lost anything is a salvage with the
// damaged copy kept.
func TestDamagedHistory(t *testing.T) {
	const n = 300
	tests := []struct {
		name    string
		damage  func(t *testing.T, dir string)
		salvage bool // the damage is found and salvaged
	}{
		{"nothing", func(*testing.T, string) {}, false},
		{"table flipped at its start", func(t *testing.T, dir string) { flip(t, only(t, dir, "*.sst"), 0) }, true},
		{"table flipped in its middle", func(t *testing.T, dir string) {
			p := only(t, dir, "*.sst")
			st, _ := os.Stat(p)
			flip(t, p, st.Size()/2)
		}, true},
		{"table flipped near its end", func(t *testing.T, dir string) { flip(t, only(t, dir, "*.sst"), -40) }, true},
		{"table flipped in its last bytes", func(t *testing.T, dir string) { flip(t, only(t, dir, "*.sst"), -8) }, true},
		{"table cut in half", func(t *testing.T, dir string) {
			cut(t, only(t, dir, "*.sst"), func(s int64) int64 { return s / 2 })
		}, true},
		{"table empty", func(t *testing.T, dir string) { cut(t, only(t, dir, "*.sst"), func(int64) int64 { return 0 }) }, true},
		{"table missing", func(t *testing.T, dir string) { os.Remove(only(t, dir, "*.sst")) }, true},
		{"MANIFEST cut to 10 bytes", func(t *testing.T, dir string) {
			cut(t, filepath.Join(dir, "MANIFEST"), func(int64) int64 { return 10 })
		}, true},
		{"MANIFEST zeroed", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "MANIFEST")
			st, _ := os.Stat(p)
			os.WriteFile(p, make([]byte, st.Size()), 0o644)
		}, true},
		{"MANIFEST missing", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "MANIFEST")) }, true},
		{"value log missing", func(t *testing.T, dir string) {
			vlogs, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
			for _, p := range vlogs {
				os.Remove(p)
			}
		}, false},
		{"runs lost from files that check out", func(t *testing.T, dir string) {
			// As a lost write-ahead log leaves it: Badger opens, runs gone.
			db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
			if err != nil {
				t.Fatal(err)
			}
			err = db.DropPrefix([]byte(entryPrefix + fmt.Sprintf("%016x", uint64(entry(0).StartedAt))[:12]))
			if cerr := db.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
		}, true},
		{"every file missing but the MANIFEST", func(t *testing.T, dir string) {
			files, _ := filepath.Glob(filepath.Join(dir, "*"))
			for _, p := range files {
				if filepath.Base(p) != "MANIFEST" {
					os.Remove(p)
				}
			}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "history")
			runs := damagedHome(t, dir, n)
			tt.damage(t, dir)

			s, err := Open(dir, Options{RunsDir: runs})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			got, problems, err := s.List(0)
			if err != nil || len(got) != n || len(problems) != 0 {
				t.Fatalf("List = %d entries, %d problems, %v; want %d runs", len(got), len(problems), err, n)
			}
			for _, e := range got {
				if _, err := s.Get(e.ID); err != nil {
					t.Fatalf("Get(%s) = %v", e.ID, err)
				}
			}
			sv := s.Salvaged()
			if tt.salvage != (sv != nil) {
				t.Fatalf("salvage = %+v, want one: %v", sv, tt.salvage)
			}
			if sv != nil {
				if sv.Failed != "" || sv.Kept != n || sv.DamagedCopy == "" {
					t.Fatalf("salvage = %+v", sv)
				}
				if _, err := os.Stat(filepath.Join(filepath.Dir(dir), sv.DamagedCopy)); err != nil {
					t.Fatalf("damaged copy: %v", err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			// Salvaged, the history is whole: the next start finds nothing.
			s, err = Open(dir, Options{RunsDir: runs})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if sv := s.Salvaged(); sv != nil {
				t.Fatalf("second open salvaged again: %+v", sv)
			}
		})
	}
}

// TestForgottenRunStaysForgotten: a run removed with Delete keeps its run
// directory; its absence is no damage, before or after a salvage.
func TestForgottenRunStaysForgotten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "history")
	runs := damagedHome(t, dir, 20)
	s, err := Open(dir, Options{RunsDir: runs})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(entry(3).ID); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, damage := range []bool{false, true} {
		if damage {
			os.Remove(filepath.Join(dir, "MANIFEST"))
		}
		s, err := Open(dir, Options{RunsDir: runs})
		if err != nil {
			t.Fatal(err)
		}
		got, _, _ := s.List(0)
		if len(got) != 19 || (s.Salvaged() != nil) != damage {
			t.Fatalf("damage %v: %d runs, salvage %+v; want 19", damage, len(got), s.Salvaged())
		}
		if _, err := s.Get(entry(3).ID); err != ErrNotFound {
			t.Fatalf("forgotten run: %v", err)
		}
		s.Close()
	}
}
