package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/history"
	"github.com/mlx-bun/mlx-metrics/backend/internal/peers"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

const peerFixtures = "../../internal/peers/testdata/"

// TestImportForeign: the files vLLM, GuideLLM and AIPerf wrote go into
// history, through a running backend or straight into a home, as runs of
// load points with their source; importing one twice keeps it once; a file
// of no known shape is refused naming what was expected.
func TestImportForeign(t *testing.T) {
	files := []struct {
		path, source string
		points       int
	}{
		{peerFixtures + "vllm-0.33.0/results.jsonl", "vllm bench serve 0.33.0", 2},
		{peerFixtures + "guidellm-0.8.1/benchmarks.json", "guidellm 0.8.1", 3},
		{peerFixtures + "aiperf-0.13.0/rate8.json", "aiperf 0.13.0", 1},
	}
	for _, target := range []string{"through a running backend", "into a home with no serve"} {
		t.Run(target, func(t *testing.T) {
			h, err := history.Open(t.TempDir(), history.Options{})
			if err != nil {
				t.Fatal(err)
			}
			flags := []string{"--server", serveHistory(t, h), "--source-version", "0.33.0"}
			var home string
			if target == "into a home with no serve" {
				h.Close()
				home = t.TempDir()
				flags = []string{"--home", home, "--source-version", "0.33.0"}
			} else {
				t.Cleanup(func() { h.Close() })
			}
			var stdout, stderr bytes.Buffer
			env := cliEnv{stdout: &stdout, stderr: &stderr}
			args := flags
			for _, f := range files {
				args = append(args, f.path)
			}
			if err := benchImportCmd(context.Background(), args, env); err != nil {
				t.Fatalf("%v\n%s", err, stderr.String())
			}
			for _, f := range files {
				if !strings.Contains(stdout.String(), "("+f.source+", 1 cell, complete)") {
					t.Errorf("stdout says nothing of %s:\n%s", f.source, stdout.String())
				}
			}
			if !strings.Contains(stdout.String(), "  problem: ") {
				t.Errorf("no problem listed:\n%s", stdout.String())
			}
			stdout.Reset()
			if err := benchImportCmd(context.Background(), args, env); err != nil {
				t.Fatalf("second import: %v", err)
			}
			if strings.Count(stdout.String(), "in history already") != len(files) {
				t.Errorf("second import said:\n%s", stdout.String())
			}
			if home != "" {
				if h, err = history.Open(filepath.Join(home, "metrics", "history"), history.Options{}); err != nil {
					t.Fatal(err)
				}
				defer h.Close()
			}
			entries, _, err := h.List(10)
			if err != nil || len(entries) != len(files) {
				t.Fatalf("history holds %d runs (%v), want %d", len(entries), err, len(files))
			}
			for _, e := range entries {
				if e.Source == nil || len(e.Cells) != 1 || len(e.Cells[0].LoadPoints) == 0 {
					t.Errorf("entry %s: source %+v, cells %d", e.ID, e.Source, len(e.Cells))
				}
			}
		})
	}
}

// TestImportForeignRefused: a file of no known shape, or one whose every
// entry is broken, is refused with what was expected; a file over the
// bound is refused before it is read.
func TestImportForeignRefused(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	huge := filepath.Join(dir, "huge.json")
	if f, err := os.Create(huge); err != nil {
		t.Fatal(err)
	} else {
		f.Truncate(peers.MaxFileBytes + 1) // sparse: nothing is written
		f.Close()
	}
	tests := []struct{ path, want string }{
		{write("other.json", `{"hello": "world"}`), "other.json: not a result file of vllm bench serve, GuideLLM or AIPerf: want a vllm bench serve --save-result JSON"},
		{write("nan.json", `{"date": "20261207-120000", "request_throughput": NaN, "completed": 1, "duration": 1}`), "holds no point that reads: entry 1: request_throughput is not a number: left out"},
		{huge, "is over 256 MiB"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		err := benchImportCmd(context.Background(), []string{"--home", t.TempDir(), tt.path}, cliEnv{stdout: &stdout, stderr: &stderr})
		var ee *exitError
		if !errors.As(err, &ee) || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%s: %v\n%s\nwant %q", filepath.Base(tt.path), err, stderr.String(), tt.want)
		}
	}
}

// TestBenchExportVLLM: a run's load points exported in vLLM's shape, from
// its run directory or by id from a backend's history, and imported again
// are the same points.
func TestBenchExportVLLM(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "20261203T100000Z-load01")
	os.MkdirAll(dir, 0o755)
	start := time.Now().Add(-time.Hour).UnixMilli()
	p := bench.LoadPoint{Point: 1, Repeat: 1, Arrival: bench.ArrivalPoisson, OfferedRate: 4, Requests: 100,
		Completed: 100, DurationS: 25.5, RequestThroughput: 3.9, OutputThroughput: 250, TotalTokenThroughput: 750,
		InputTokens: 12800, OutputTokens: 6400, TTFT: bench.Dist{Count: 100, Mean: 20, Median: 18, P99: 40},
		E2EL: bench.Dist{Count: 100, Mean: 150, Median: 140, P99: 200}}
	rec := bench.RunRecord{ID: "20261203T100000Z-load01", Complete: true, StartedAt: start, FinishedAt: start + 60_000,
		Cells: []bench.CellResult{{Key: "m/tree/a", Model: "m", Status: bench.CellMeasured, LoadPoints: []bench.LoadPoint{p}}}}
	b, _ := json.Marshal(rec)
	os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644)

	h, err := history.Open(t.TempDir(), history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	server := serveHistory(t, h)
	env := cliEnv{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	if err := benchImportCmd(context.Background(), []string{"--server", server, dir}, env); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{dir, rec.ID} {
		out := filepath.Join(t.TempDir(), "summary.json")
		if err := benchExportCmd(context.Background(), []string{"--format", "vllm", "--server", server, "--out", out, arg}, env); err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		body, _ := os.ReadFile(out)
		back, err := peers.Decode(body, peers.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := back.Cells[0].LoadPoints
		if len(got) != 1 || got[0].TTFT != p.TTFT || got[0].E2EL != p.E2EL || got[0].OfferedRate != 4 ||
			got[0].InputTokens != 12800 || back.Cells[0].Model != "m" {
			t.Errorf("%s: back %+v, want %+v", arg, got, p)
		}
	}
	err = benchExportCmd(context.Background(), []string{"--format", "csv", dir}, env)
	if err == nil || !strings.Contains(err.Error(), "want --format vllm") {
		t.Errorf("--format csv: %v", err)
	}
}
