package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mlx-bun/mlx-metrics/backend/internal/history"
	"github.com/mlx-bun/mlx-metrics/gpu/engine"
	"github.com/mlx-bun/mlx-metrics/gpu/engine/enginetest"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// testDecodeRate spaces the test engine's tokens 10 ms apart: a client the
// race detector and a loaded machine hold up still reads a run's tokens in
// more than one read, so their arrival stamps time it (at 2000 tok/s a
// whole run could arrive in one read, and its rate is then unmeasurable).
const testDecodeRate = 100

// engineHandler is a reference engine decoding at rate, run until the
// test ends.
func engineHandler(t *testing.T, rate float64) http.Handler {
	t.Helper()
	cfg := engine.DefaultConfig()
	cfg.LoadTime, cfg.DecodeRate, cfg.PrefillRate = 0, rate, 100000
	return enginetest.Run(t, cfg, engine.Options{}).Handler()
}

// runningEngine is the reference engine served in this process on
// 127.0.0.1: the server a plan attaches to.
func runningEngine(t *testing.T, h http.Handler) string {
	t.Helper()
	if h == nil {
		h = engineHandler(t, testDecodeRate)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// slowSecondDecode answers the second decode run of each attempt from an engine
// decoding 40x slower than the one answering the others: the decode runs
// then spread far over the plan's unstableSpread of 3, also on a loaded
// machine, where the fast engine's 10 ms steps run late (measured at 25
// tok/s, not 100, under scripts/stress --load: against a 10x slower engine
// the spread was 2.5) while the slow one's 400 ms steps do not. (Slowing
// one engine's writes instead only batches its tokens into fewer writes.)
func slowSecondDecode(t *testing.T) http.Handler {
	fast, slow := engineHandler(t, testDecodeRate), engineHandler(t, testDecodeRate/40)
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The second decode run of both attempts: the runner measures
		// uneven decode runs once more before it calls them unstable.
		if r.URL.Path == "/v1/completions" {
			if i := n.Add(1); i == 2 || i == 4 {
				slow.ServeHTTP(w, r)
				return
			}
		}
		fast.ServeHTTP(w, r)
	})
}

// attachPlan writes a plan of one cell attached to base.
func attachPlan(t *testing.T, base string) string {
	t.Helper()
	p := bench.Plan{
		Scope: bench.ScopeAll,
		Cells: []bench.Cell{{Model: "reference-sim", Kind: bench.KindTree, Configuration: "attached",
			Server: bench.Server{Attach: true, BaseURL: base + "/v1"}}},
		Phases: bench.Phases{DecodeRuns: 2, DecodeTokens: 8, ColdPromptTokens: 50, ColdRuns: 1, WarmRuns: 1,
			LongContextTokens: -1, Concurrency: 2, ConcurrentTokens: 8, UnstableSpread: 3},
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, t.TempDir(), "plan.json", string(b))
}

func exitCodeOf(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	}
	return 1
}

// bench run ends with the medians and report.md's path, and its exit
// status says complete (0), incomplete (1) or usage (2); --strict fails an
// unstable cell; --home records into serve's history.
func TestBenchRunSummaryAndExit(t *testing.T) {
	goodPlan := attachPlan(t, runningEngine(t, nil))
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	notFoundPlan := attachPlan(t, notFound.URL)
	// Each use gets its own server: the slow request is its second.
	unevenPlan := func() string { return attachPlan(t, runningEngine(t, slowSecondDecode(t))) }

	tests := []struct {
		name    string
		args    func(out, home string) []string
		code    int
		stdout  []string // lines the output holds
		errHas  string
		history bool // the run is in home's history afterwards
	}{
		{"complete", func(out, _ string) []string { return []string{"--plan", goodPlan, "--out", out} }, 0,
			[]string{"CELL", "reference-sim/tree/attached  measured", "report: OUT/report.md"}, "", false},
		{"a failed cell", func(out, _ string) []string { return []string{"--plan", notFoundPlan, "--out", out} }, 1,
			[]string{"reference-sim/tree/attached  failed", "report: OUT/report.md"}, "incomplete: 1 problem, see OUT/report.md", false},
		{"unstable, not strict", func(out, _ string) []string { return []string{"--plan", unevenPlan(), "--out", out} }, 0,
			[]string{"reference-sim/tree/attached  measured", "unstable: decode runs spread"}, "", false},
		{"unstable under --strict", func(out, _ string) []string { return []string{"--plan", unevenPlan(), "--out", out, "--strict"} }, 1,
			[]string{"reference-sim/tree/attached  failed"}, "incomplete", false},
		{"--home records into history", func(_, home string) []string {
			return []string{"--plan", goodPlan, "--home", home, "--id", "20261203T120000Z-hand"}
		}, 0,
			[]string{"report: HOME/metrics/bench/runs/20261203T120000Z-hand/report.md", "history: kept as 20261203T120000Z-hand"}, "", true},
		{"no --out or --home: serve's home (MLX_METRICS_HOME)", func(_, _ string) []string { return []string{"--plan", goodPlan, "--id", "20261203T120000Z-hand"} }, 0,
			[]string{"report: HOME/metrics/bench/runs/20261203T120000Z-hand/report.md", "history: kept as 20261203T120000Z-hand"}, "", true},
		{"the plan as the argument", func(out, _ string) []string { return []string{goodPlan, "--out", out} }, 0,
			[]string{"reference-sim/tree/attached  measured", "report: OUT/report.md"}, "", false},
		{"an argument beside --plan", func(out, _ string) []string { return []string{"--plan", goodPlan, "--out", out, "extra"} }, 2, nil, `unexpected argument "extra"`, false},
		{"two arguments", func(out, _ string) []string { return []string{goodPlan, "extra", "--out", out} }, 2, nil, `unexpected argument "extra"`, false},
		{"no plan at all", func(out, _ string) []string { return []string{"--out", out} }, 2, nil, "--plan is required", false},
		{"a path as --id", func(_, home string) []string { return []string{"--plan", goodPlan, "--home", home, "--id", "../x"} }, 2, nil, `--id "../x"`, false},
		{"no plan", func(out, _ string) []string { return []string{"--plan", filepath.Join(out, "none.json"), "--out", out} }, 2, nil, "plan:", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, home := t.TempDir(), t.TempDir()
			t.Setenv("MLX_METRICS_HOME", home) // the default home, used only without --out and --home
			var stdout, stderr bytes.Buffer
			err := benchRunCmd(context.Background(), tt.args(out, home), cliEnv{stdout: &stdout, stderr: &stderr})
			if got := exitCodeOf(err); got != tt.code {
				t.Fatalf("exit %d (%v), want %d\n%s", got, err, tt.code, stdout.String())
			}
			fill := strings.NewReplacer("OUT", out, "HOME", home).Replace
			for _, want := range tt.stdout {
				if !strings.Contains(stdout.String(), fill(want)) {
					t.Errorf("output lacks %q:\n%s", fill(want), stdout.String())
				}
			}
			if tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), fill(tt.errHas))) {
				t.Errorf("err = %v, want %q", err, fill(tt.errHas))
			}
			if tt.history {
				h, err := history.Open(filepath.Join(home, "metrics", "history"), history.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer h.Close()
				e, err := h.Get("20261203T120000Z-hand")
				if err != nil || !e.Complete || len(e.Cells) != 1 || e.Cells[0].DecodeTokensPerSecond == nil || !e.Cells[0].Attached {
					t.Errorf("history entry %+v, %v", e, err)
				}
			}
		})
	}
}

// While serve runs on the home it holds the history: bench run --home
// says so, keeps the run in serve's runs directory, and still exits 0.
func TestBenchRunHomeWhileServeHoldsHistory(t *testing.T) {
	home := t.TempDir()
	h, err := history.Open(filepath.Join(home, "metrics", "history"), history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	plan := attachPlan(t, runningEngine(t, nil))
	var stdout bytes.Buffer
	err = benchRunCmd(context.Background(), []string{"--plan", plan, "--home", home, "--id", "20261203T120000Z-held"}, cliEnv{stdout: &stdout, stderr: &bytes.Buffer{}})
	if err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	if !strings.Contains(stdout.String(), "history: serve is running on "+home+" and holds its history") {
		t.Errorf("output:\n%s", stdout.String())
	}
	if _, err := os.Stat(filepath.Join(home, "metrics", "bench", "runs", "20261203T120000Z-held", "run.json")); err != nil {
		t.Errorf("run.json not in serve's runs directory: %v", err)
	}
}
