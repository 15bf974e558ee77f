package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/app"
	"github.com/mlx-bun/mlx-metrics/backend/internal/benchapi"
	"github.com/mlx-bun/mlx-metrics/backend/internal/history"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// writeRun leaves a run directory with a run.json of id, as `bench run
// --out` does, and returns it.
func writeRun(t *testing.T, id string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), id)
	os.MkdirAll(dir, 0o755)
	start := time.Now().Add(-time.Hour).UnixMilli()
	rec := bench.RunRecord{ID: id, Profile: "hand", Complete: true, StartedAt: start, FinishedAt: start + 60_000,
		Cells: []bench.CellResult{{Key: "m/tree/a", Status: bench.CellMeasured, Samples: []bench.Sample{
			{Phase: bench.PhaseDecode, Run: 1, CompletionTokens: 64, TotalMs: 1300, DecodeTokensPerSecond: 50},
		}}}}
	b, _ := json.Marshal(rec)
	if err := os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// serveHistory runs the history routes over h on loopback, as serve does.
func serveHistory(t *testing.T, h *history.Store) string {
	t.Helper()
	srv := server.New(server.Options{}, app.Routes(app.Handlers{Bench: benchapi.New(nil, h, nil, nil, benchapi.Options{})})...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Listener(ln)
	t.Cleanup(func() { srv.Shutdown() })
	return "http://" + ln.Addr().String()
}

// TestBenchImport: runs recorded by hand go into history, through a
// running backend or straight into a home no serve holds; a bad one is
// reported without keeping the good ones out, and a second import of the
// same run leaves it as it is.
func TestBenchImport(t *testing.T) {
	good := writeRun(t, "20261203T100000Z-hand01")
	bad := t.TempDir() // no run.json
	tests := []struct {
		name string
		// target gives the flags that name the history, and the store to
		// check afterwards.
		target func(t *testing.T) ([]string, func() *history.Store)
	}{
		{"through a running backend", func(t *testing.T) ([]string, func() *history.Store) {
			h, err := history.Open(t.TempDir(), history.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { h.Close() })
			return []string{"--server", serveHistory(t, h)}, func() *history.Store { return h }
		}},
		{"into a home with no serve", func(t *testing.T) ([]string, func() *history.Store) {
			home := t.TempDir()
			return []string{"--home", home}, func() *history.Store {
				h, err := history.Open(filepath.Join(home, "metrics", "history"), history.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { h.Close() })
				return h
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flags, store := tt.target(t)
			var stdout, stderr bytes.Buffer
			env := cliEnv{stdout: &stdout, stderr: &stderr}
			err := benchImportCmd(context.Background(), append(flags, good, bad), env)
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != 1 || !strings.Contains(err.Error(), "1 run of 2 not imported") {
				t.Fatalf("err = %v, want exit 1 for the bad one", err)
			}
			if !strings.Contains(stdout.String(), "kept run 20261203T100000Z-hand01 (hand, 1 cell, complete)") ||
				!strings.Contains(stderr.String(), bad) {
				t.Errorf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			}
			stdout.Reset()
			if err := benchImportCmd(context.Background(), append(flags, filepath.Join(good, "run.json")), env); err != nil {
				t.Fatalf("second import: %v", err)
			}
			if !strings.Contains(stdout.String(), "in history already") {
				t.Errorf("second import said:\n%s", stdout.String())
			}
			e, err := store().Get("20261203T100000Z-hand01")
			if err != nil || e.RunDirectory != good || e.Cells[0].DecodeTokensPerSecond == nil {
				t.Errorf("entry %+v, %v", e, err)
			}
		})
	}
}

// While serve holds a home's history, --home says to import through serve.
func TestBenchImportHomeHeld(t *testing.T) {
	home := t.TempDir()
	h, err := history.Open(filepath.Join(home, "metrics", "history"), history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	err = benchImportCmd(context.Background(), []string{"--home", home, writeRun(t, "20261203T100000Z-held")}, cliEnv{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), "import through it, without --home") {
		t.Fatalf("err = %v", err)
	}
}
