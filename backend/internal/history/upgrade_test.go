package history

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// Files in the shapes the original module wrote into <home>/metrics/history:
// its bench.ts writes JSON.stringify(entry, null, 1) of its protocol.ts's
// BenchHistoryEntry to <id>.json, the id its start time with ':' and '.' made
// '-', then the profile (joshuarossi/mlx-bun's metrics module, as the
// stored index holds it; no commit is named there). Cells of its runner's
// plans (scripts/bench/plan.ts at 0ee65cced0e5df0645357df573d09d289134bc2a)
// are keyed model/configuration/tree or model/reference.

var upgradeNow = time.Date(2026, 7, 10, 9, 0, 0, 0, time.UTC)

func originalFile(id string, started string, finished any, machine any, cells ...map[string]any) []byte {
	if cells == nil {
		cells = []map[string]any{}
	}
	data, err := json.MarshalIndent(map[string]any{
		"id": id, "profile": "cpm5-scoped", "scope": "scoped", "startedAt": started, "finishedAt": finished,
		"durationMs": 1_800_000, "complete": true, "exitCode": 0, "problems": []string{},
		"machine": machine, "runDirectory": "/Users/x/.mlx-bun/metrics/bench/runs/" + id, "cells": cells,
	}, "", " ")
	if err != nil {
		panic(err)
	}
	return data
}

var (
	treeCell = map[string]any{
		"key": "cpm5/default/candidate", "model": "cpm5", "kind": "tree", "tree": "candidate", "configuration": "default",
		"status": "measured", "decodeTokensPerSecond": 212.5, "ttftColdMs": 180.0, "prefill1kTokensPerSecond": 5400.0,
		"contextPrefillTokensPerSecond": nil, "aggregateTokensPerSecond": 610.0, "coldStartMs": 2300.0, "peakRssMB": 1800.0,
	}
	refCell = map[string]any{
		"key": "cpm5/mlx-lm", "model": "cpm5", "kind": "reference", "reference": "mlx-lm", "status": "skipped",
		"note": "packed trellis has no stock reference loader", "decodeTokensPerSecond": nil, "ttftColdMs": nil,
		"prefill1kTokensPerSecond": nil, "contextPrefillTokensPerSecond": nil, "aggregateTokensPerSecond": nil,
		"coldStartMs": nil, "peakRssMB": nil,
	}
	mac = map[string]any{"chip": "Apple M3 Max", "memoryBytes": 68719476736, "host": "studio", "os": "Darwin 25.0.0"}
)

const (
	goodA = "2026-07-06T12-00-00-000Z-cpm5-scoped"
	goodB = "2026-07-07T08-30-15-250Z-cpm5-scoped"
)

// goodFiles are two runs as the original wrote them: one with a machine and
// a tree and a reference cell, one with none and no finishedAt.
func goodFiles() map[string][]byte {
	return map[string][]byte{
		goodA + ".json": originalFile(goodA, "2026-07-06T12:00:00.000Z", "2026-07-06T12:30:00.000Z", mac, treeCell, refCell),
		goodB + ".json": originalFile(goodB, "2026-07-07T08:30:15.250Z", nil, nil),
	}
}

func badFiles() map[string][]byte {
	return map[string][]byte{
		"2026-07-08T00-00-00-000Z-x.json":          []byte(`{"id":"2026-07-08T00-00-00-000Z-x","startedAt":`), // cut short
		"2026-07-08T01-00-00-000Z-x.json":          originalFile("2026-07-08T01-00-00-000Z-x", "yesterday", nil, nil),
		"2026-07-08T02-00-00-000Z-x.json":          originalFile("2026-07-08T02-00-00-000Z-x", "2031-01-01T00:00:00.000Z", nil, nil),
		"2026-07-08T03-00-00-000Z-x.json.4242.tmp": []byte(`{"id":`),
		"notes.json": []byte(`[1,2,3]`),
	}
}

func writeFiles(t *testing.T, dir string, files ...map[string][]byte) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, fs := range files {
		for name, data := range fs {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func openAt(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, Options{Clock: clock.NewFake(upgradeNow)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ids(t *testing.T, s *Store) []string {
	t.Helper()
	es, problems, err := s.List(0)
	if err != nil || len(problems) > 0 {
		t.Fatalf("List: %v %v", err, problems)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func TestUpgradeFromOriginal(t *testing.T) {
	tests := []struct {
		name string
		// prepare lays out the home's history folder (dir) before Open.
		prepare      func(t *testing.T, dir string)
		wantRuns     []string // newest first
		wantImported int
		wantAlready  int
		wantSkipped  int
		wantFolder   bool
	}{
		{"no folder", func(*testing.T, string) {}, nil, 0, 0, 0, false},
		{"an empty folder", func(t *testing.T, dir string) { writeFiles(t, dir) }, nil, 0, 0, 0, false},
		{"the original's runs", func(t *testing.T, dir string) { writeFiles(t, dir, goodFiles()) },
			[]string{goodB, goodA}, 2, 0, 0, true},
		{"bad files beside good ones", func(t *testing.T, dir string) { writeFiles(t, dir, goodFiles(), badFiles()) },
			[]string{goodB, goodA}, 2, 0, 5, true},
		{"only bad files", func(t *testing.T, dir string) { writeFiles(t, dir, badFiles()) }, nil, 0, 0, 5, true},
		{"the original's files beside a Badger this module opened there", func(t *testing.T, dir string) {
			s := openAt(t, dir)
			if err := s.Put(entry(1)); err != nil {
				t.Fatal(err)
			}
			s.Close()
			writeFiles(t, dir, goodFiles())
		}, []string{entry(1).ID, goodB, goodA}, 2, 0, 0, true},
		{"an import cut short before its note", func(t *testing.T, dir string) {
			s := openAt(t, dir)
			e, err := bench.DecodeOriginalEntry(goodFiles()[goodA+".json"], upgradeNow)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Put(e); err != nil {
				t.Fatal(err)
			}
			s.Close()
			writeFiles(t, dir+".original-1", goodFiles())
		}, []string{goodB, goodA}, 1, 1, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "history")
			tt.prepare(t, dir)
			s := openAt(t, dir)
			defer func() { s.Close() }()
			if got := ids(t, s); !slices.Equal(got, tt.wantRuns) {
				t.Errorf("runs %v, want %v", got, tt.wantRuns)
			}
			ups := s.Upgraded()
			if !tt.wantFolder {
				if ups != nil {
					t.Fatalf("Upgraded %+v, want nil", ups)
				}
				return
			}
			if len(ups) != 1 {
				t.Fatalf("Upgraded %+v, want one", ups)
			}
			up := ups[0]
			if up.Imported != tt.wantImported || up.Already != tt.wantAlready || len(up.Skipped) != tt.wantSkipped || up.Failed != "" {
				t.Errorf("upgrade %+v, want %d imported, %d already, %d skipped", up, tt.wantImported, tt.wantAlready, tt.wantSkipped)
			}
			for _, k := range up.Skipped {
				if strings.Contains(k.Reason, string(filepath.Separator)+"tmp") || strings.Contains(k.Reason, dir) {
					t.Errorf("a reason names a server path: %q", k.Reason)
				}
			}
			// Nothing of the original's is left in Badger's folder; the
			// folder aside keeps every file and the note.
			left, _ := filepath.Glob(filepath.Join(dir, "*.json*"))
			if len(left) > 0 {
				t.Errorf("left in the history folder: %v", left)
			}
			aside := filepath.Join(filepath.Dir(dir), up.Folder)
			if _, err := os.Stat(filepath.Join(aside, importedNote)); err != nil {
				t.Errorf("no note in %s: %v", up.Folder, err)
			}
			kept, _ := filepath.Glob(filepath.Join(aside, "*"))
			if len(kept) != up.Files+1 {
				t.Errorf("%d files aside, want %d and the note", len(kept), up.Files)
			}

			// A second start imports nothing, and a run forgotten since
			// stays forgotten.
			for _, id := range tt.wantRuns {
				if strings.HasPrefix(id, "2026-07-06") {
					if err := s.Delete(id); err != nil {
						t.Fatal(err)
					}
				}
			}
			s.Close()
			s = openAt(t, dir)
			if ups := s.Upgraded(); ups != nil {
				t.Errorf("second start: Upgraded %+v, want nil", ups)
			}
			want := slices.DeleteFunc(slices.Clone(tt.wantRuns), func(id string) bool { return id == goodA })
			if got := ids(t, s); !slices.Equal(got, want) {
				t.Errorf("second start: runs %v, want %v", got, want)
			}
		})
	}
}

func TestOriginalEntryConverted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "history")
	writeFiles(t, dir, goodFiles())
	s := openAt(t, dir)
	defer s.Close()
	a, err := s.Get(goodA)
	if err != nil {
		t.Fatal(err)
	}
	if a.StartedAt != time.Date(2026, 7, 6, 12, 0, 0, 0, time.UTC).UnixMilli() || a.FinishedAt != a.StartedAt+1_800_000 {
		t.Errorf("times %d..%d", a.StartedAt, a.FinishedAt)
	}
	if a.Machine.Chip != "Apple M3 Max" || a.Machine.MemoryBytes != 68719476736 || a.RunDirectory == "" {
		t.Errorf("machine %+v, runDirectory %q", a.Machine, a.RunDirectory)
	}
	if len(a.Cells) != 2 || a.Cells[0].Configuration != "default/candidate" || a.Cells[1].Configuration != "mlx-lm" ||
		*a.Cells[0].DecodeTokensPerSecond != 212.5 || a.Cells[0].ContextPrefillTokensPerSecond != nil ||
		a.Cells[1].Status != bench.CellSkipped || a.Cells[1].Note == "" {
		t.Errorf("cells %+v", a.Cells)
	}
	b, err := s.Get(goodB)
	if err != nil {
		t.Fatal(err)
	}
	// finishedAt null: its duration says when it ended.
	if b.FinishedAt != b.StartedAt+1_800_000 || b.Machine != (bench.Machine{}) {
		t.Errorf("%+v", b)
	}
}

// TestOriginalRunDirectoriesNoDamage: the original's run directories, whose
// run.json is its runner's (ISO times), are no runs this history lacks: no
// salvage at start.
func TestOriginalRunDirectoriesNoDamage(t *testing.T) {
	root := t.TempDir()
	dir, runs := filepath.Join(root, "history"), filepath.Join(root, "runs")
	writeFiles(t, dir, goodFiles())
	writeFiles(t, filepath.Join(runs, goodA), map[string][]byte{
		"run.json": []byte(`{"plan":{"profile":"scoped"},"startedAt":"2026-07-06T12:00:00.000Z","finishedAt":"2026-07-06T12:30:00.000Z","cells":[]}`),
	})
	s, err := Open(dir, Options{Clock: clock.NewFake(upgradeNow), RunsDir: runs})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if sv := s.Salvaged(); sv != nil {
		t.Errorf("salvaged %+v", sv)
	}
	if got := ids(t, s); !slices.Equal(got, []string{goodB, goodA}) {
		t.Errorf("runs %v", got)
	}
}
