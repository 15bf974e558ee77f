package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/mlx-bun/mlx-metrics/gpu/engine"
	"github.com/mlx-bun/mlx-metrics/gpu/engine/enginetest"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// TestMain doubles as the reference engine: cells start this test binary
// with "engine …" as {self} does with mlx-metrics.
func TestMain(m *testing.M) {
	enginetest.ServeIfAsked()
	if len(os.Args) == 4 && os.Args[1] == "fake-server" {
		fakeServer(os.Args[2], os.Args[3])
	}
	os.Exit(m.Run())
}

// fakeServer is a misbehaving OpenAI-compatible server: the reference
// engine behind a handler that, on the first generation request, either
// dies ("crash": a server crashing mid-phase) or answers a stream without
// usage ("no-usage").
func fakeServer(mode, port string) {
	cfg := engine.DefaultConfig()
	cfg.LoadTime = 0
	e, err := engine.New(cfg, engine.Options{})
	if err != nil {
		panic(err)
	}
	go e.Run(context.Background())
	h := e.Handler()
	err = http.ListenAndServe("127.0.0.1:"+port, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		switch mode {
		case "crash":
			fmt.Fprintln(os.Stderr, "fake-server: simulated crash")
			os.Exit(3)
		case "no-usage":
			w.Header().Set("Content-Type", "text/event-stream")
			for range 8 {
				fmt.Fprint(w, "data: {\"choices\":[{\"text\":\" x\",\"delta\":{\"content\":\" x\"}}]}\n\n")
			}
			fmt.Fprint(w, "data: [DONE]\n\n")
		}
	}))
	fmt.Fprintln(os.Stderr, "fake-server:", err)
	os.Exit(1)
}

func fakeServerCell(mode string) bench.Cell {
	return bench.Cell{
		Model: "reference-sim", Kind: bench.KindReference, Configuration: mode,
		Server: bench.Server{
			Argv:     []string{bench.SelfPlaceholder, "fake-server", mode, bench.PortPlaceholder},
			BaseURL:  "http://127.0.0.1:{port}/v1",
			ReadyURL: "http://127.0.0.1:{port}/health",
		},
	}
}

func engineCell(kind, conf string, flags ...string) bench.Cell {
	return bench.Cell{
		Model: "reference-sim", Kind: kind, Configuration: conf,
		Server: bench.Server{
			Argv:     append([]string{bench.SelfPlaceholder, "engine", "--port", bench.PortPlaceholder}, flags...),
			BaseURL:  "http://127.0.0.1:{port}/v1",
			ReadyURL: "http://127.0.0.1:{port}/health",
		},
	}
}

// syncBuffer is the progress output, read while the run writes it.
type syncBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	onLine func(string)
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.buf.Write(p)
	b.mu.Unlock()
	if b.onLine != nil {
		for _, l := range strings.Split(strings.TrimSpace(string(p)), "\n") {
			b.onLine(l)
		}
	}
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func runPlan(t *testing.T, ctx context.Context, plan bench.Plan, out *syncBuffer) (bench.RunRecord, string) {
	t.Helper()
	if err := plan.Validate(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rec, err := Run(ctx, Options{Plan: plan, Profile: "test", ID: "20261202T000000Z-test", OutDir: dir, Self: os.Args[0], Out: out})
	if err != nil {
		t.Fatal(err)
	}
	// run.json on disk is the record returned.
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var disk bench.RunRecord
	if err := json.Unmarshal(b, &disk); err != nil {
		t.Fatal(err)
	}
	if disk.ExitCode != rec.ExitCode || len(disk.Cells) != len(rec.Cells) || disk.Cancelled != rec.Cancelled {
		t.Errorf("run.json differs from the record: %+v", disk)
	}
	return rec, dir
}

// physical checks a measured figure against the engine's cost model from
// the side physics fixes: a rate cannot beat the model (nor a latency
// undercut it) by more than fast, the step alignment and rounding; on the
// other side only a gross error counts (slow: a factor), since a loaded
// machine makes every figure slower and a test must not time the machine.
func physical(got, want, fast, slow float64, higherIsBetter bool) bool {
	if higherIsBetter {
		return got <= want*(1+fast) && got >= want/slow
	}
	return got >= want*(1-fast) && got <= want*slow
}

// The runner against the reference engine measures the rates its cost
// model sets: never better than the model, and within a factor of it
// however busy the machine is.
func TestRunMeasuresKnownRates(t *testing.T) {
	const (
		decodeRate  = 200.0
		prefillRate = 20000.0
		slowdown    = 0.1
	)
	plan := bench.Plan{
		Scope: bench.ScopeScoped, Models: []string{"reference-sim"},
		Cells: []bench.Cell{engineCell(bench.KindTree, "fast",
			"--decode-rate", fmt.Sprint(decodeRate), "--prefill-rate", fmt.Sprint(prefillRate),
			"--batch-slowdown", fmt.Sprint(slowdown), "--load-ms", "100", "--prefill-chunk", "512")},
		Phases: bench.Phases{DecodeRuns: 3, DecodeTokens: 60, ColdPromptTokens: 1000, ColdRuns: 2, WarmRuns: 2,
			LongContextTokens: 4000, LongDecodeTokens: 20, Concurrency: 4, ConcurrentTokens: 40},
	}
	out := &syncBuffer{}
	rec, dir := runPlan(t, context.Background(), plan, out)
	if rec.ExitCode != ExitComplete || !rec.Complete {
		t.Fatalf("exit %d complete %v problems %q\n%s", rec.ExitCode, rec.Complete, rec.Problems, out)
	}
	c := rec.Cells[0]
	cc := bench.CompactCellOf(c)
	// 4 chat streams of 35 prompt tokens: one 140-token prefill step, then
	// 39 decode steps at (1+0.1*3)/200 s.
	aggWall := 140/prefillRate + 39*(1+slowdown*3)/decodeRate
	tests := []struct {
		name           string
		got, want      float64
		fast           float64 // how far better than the model the figure may read
		higherIsBetter bool
	}{
		{"decode tok/s", *cc.DecodeTokensPerSecond, decodeRate, 0.05, true},
		{"cold TTFT ms (1000-token prompt)", *cc.TTFTColdMs, 1000 / prefillRate * 1000, 0.1, false},
		{"prefill tok/s", *cc.Prefill1kTokensPerSecond, prefillRate, 0.1, true},
		{"long-context prefill tok/s", *cc.ContextPrefillTokensPerSecond, prefillRate, 0.05, true},
		{"aggregate tok/s", *cc.AggregateTokensPerSecond, 160 / aggWall, 0.1, true},
	}
	for _, tt := range tests {
		t.Logf("%s = %.1f (model %.1f)", tt.name, tt.got, tt.want)
		if !physical(tt.got, tt.want, tt.fast, 3, tt.higherIsBetter) {
			t.Errorf("%s = %.1f, want %.1f: at most %.0f%% better, and within a factor of 3", tt.name, tt.got, tt.want, tt.fast*100)
		}
	}
	if w := cc.TTFTWarmMs; w == nil || *w > *cc.TTFTColdMs/3 {
		t.Errorf("warm TTFT %v ms is not well under cold %.1f ms: the prefix cache did not show", w, *cc.TTFTColdMs)
	}
	if *cc.ColdStartMs < 100 {
		t.Errorf("cold start %.0f ms is under the engine's 100 ms load", *cc.ColdStartMs)
	}
	if c.PeakRSSBytes <= 0 {
		t.Error("no peak RSS")
	}
	if c.PeakGPUMemoryBytes == nil && !strings.HasPrefix(c.GPUMemoryNote, "unavailable: no GPU found") {
		t.Errorf("GPU memory note %q", c.GPUMemoryNote)
	}
	for _, s := range c.Samples {
		if s.Error == "" && s.Phase == bench.PhaseColdTTFT && s.PromptTokens != 1000 {
			t.Errorf("cold prompt has %d tokens by usage, want 1000", s.PromptTokens)
		}
	}
	endpoints, stamped := map[string]bool{}, 0
	for _, s := range c.Samples {
		endpoints[s.Endpoint] = true
		if s.Stamped {
			stamped++
		}
	}
	// A process's first reads may come unstamped (loadgen's arrival.go).
	t.Logf("%d of %d samples timed by arrival stamps", stamped, len(c.Samples))
	if runtime.GOOS == "linux" && stamped == 0 {
		t.Errorf("none of %d samples was timed by arrival stamps", len(c.Samples))
	}
	if !endpoints["/v1/completions"] || !endpoints["/v1/chat/completions"] {
		t.Errorf("endpoints used %v, want both", endpoints)
	}
	if n := strings.Count(out.String(), "=== reference-sim/tree/fast ===\n"); n != 1 {
		t.Errorf("%d cell lines in\n%s", n, out)
	}
	report, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !strings.Contains(string(report), "| reference-sim/tree/fast | measured") {
		t.Errorf("report.md lacks the cell row:\n%s", report)
	}
	if logs, _ := filepath.Glob(filepath.Join(dir, "logs", "01-*.stderr.log")); len(logs) != 1 {
		t.Errorf("server logs: %v", logs)
	}
}

var problemLine = regexp.MustCompile(`(?m)^  problem: (.+)$`)

func TestRunFailuresDoNotHideCells(t *testing.T) {
	small := bench.Phases{DecodeRuns: 2, DecodeTokens: 8, ColdPromptTokens: 50, ColdRuns: 1, WarmRuns: 1,
		LongContextTokens: -1, Concurrency: 2, ConcurrentTokens: 8}
	broken := engineCell(bench.KindReference, "exits", "--decode-rate", "-1")
	skipped := engineCell(bench.KindReference, "skipped")
	skipped.Skip = "needs an NVIDIA GPU"
	wrongModel := engineCell(bench.KindReference, "wrong-model", "--decode-rate", fmt.Sprint(timedRate), "--load-ms", "0")
	wrongModel.Server.APIModel = "not-served"
	good := engineCell(bench.KindTree, "good", "--decode-rate", fmt.Sprint(timedRate), "--prefill-rate", "100000", "--load-ms", "0")
	plan := bench.Plan{Scope: bench.ScopeAll, Cells: []bench.Cell{broken, skipped, wrongModel, good}, Phases: small}
	out := &syncBuffer{}
	rec, dir := runPlan(t, context.Background(), plan, out)

	if rec.ExitCode != ExitIncomplete || rec.Complete {
		t.Fatalf("exit %d complete %v, want 1 and incomplete", rec.ExitCode, rec.Complete)
	}
	want := []struct {
		status             bench.CellStatus
		noteHas, stderrHas string
	}{
		{bench.CellFailed, "exited", "decode-rate"},
		{bench.CellSkipped, "needs an NVIDIA GPU", ""},
		{bench.CellFailed, "failed twice", ""},
		{bench.CellMeasured, "", ""},
	}
	for i, w := range want {
		c := rec.Cells[i]
		if c.Status != w.status || !strings.Contains(c.Note, w.noteHas) || !strings.Contains(c.StderrTail, w.stderrHas) {
			t.Errorf("cell %s: status %q note %q stderr %q; want %q, note with %q, stderr with %q",
				c.Key, c.Status, c.Note, c.StderrTail, w.status, w.noteHas, w.stderrHas)
		}
	}
	// The wrong model's phases were each tried twice.
	attempts := map[int]int{}
	for _, s := range rec.Cells[2].Samples {
		if s.Phase == bench.PhaseDecode {
			attempts[s.Attempt]++
		}
	}
	if attempts[1] == 0 || attempts[2] == 0 {
		t.Errorf("decode attempts %v, want a retry", attempts)
	}
	for _, key := range []string{"reference-sim/reference/exits", "reference-sim/reference/skipped", "reference-sim/reference/wrong-model", "reference-sim/tree/good"} {
		if !strings.Contains(out.String(), "=== "+key+" ===\n") {
			t.Errorf("no cell line for %s", key)
		}
	}
	problems := problemLine.FindAllStringSubmatch(out.String(), -1)
	if len(problems) != len(rec.Problems) || len(problems) < 3 {
		t.Errorf("%d problem lines for %d problems:\n%s", len(problems), len(rec.Problems), out)
	}
	report, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, s := range []string{"## Problems", "### reference-sim/reference/exits failed", "stderr tail", "| reference-sim/tree/good | measured"} {
		if !strings.Contains(string(report), s) {
			t.Errorf("report.md lacks %q:\n%s", s, report)
		}
	}
	e := bench.Compact(rec, dir)
	if e.Complete || len(e.Cells) != 4 || e.Cells[3].DecodeTokensPerSecond == nil || e.Cells[0].DecodeTokensPerSecond != nil {
		t.Errorf("compact entry %+v", e)
	}
}

// Cancelling (SIGTERM in the command) mid-cell stops the server's whole
// process group and still writes the record.
func TestCancelMidCell(t *testing.T) {
	tests := []struct {
		name     string
		flags    []string
		cancelOn string // cancel when a progress line starts so
	}{
		{"while streaming", []string{"--decode-rate", "20", "--load-ms", "0"}, "phase decode"},
		{"while loading", []string{"--load-ms", "60000"}, "started "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := bench.Plan{
				Scope: bench.ScopeAll,
				Cells: []bench.Cell{
					engineCell(bench.KindTree, "slow", tt.flags...),
					engineCell(bench.KindReference, "never-started", "--load-ms", "0"),
				},
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			started := regexp.MustCompile(`\(pid (\d+)\)`)
			var pgid int
			out := &syncBuffer{}
			out.onLine = func(l string) {
				if m := started.FindStringSubmatch(l); m != nil && pgid == 0 {
					pgid, _ = strconv.Atoi(m[1])
				}
				if strings.HasPrefix(l, tt.cancelOn) {
					cancel()
				}
			}
			rec, _ := runPlan(t, ctx, plan, out)
			if !rec.Cancelled || rec.ExitCode != ExitCancelled || rec.Complete {
				t.Fatalf("cancelled %v exit %d complete %v", rec.Cancelled, rec.ExitCode, rec.Complete)
			}
			if rec.Cells[0].Status != bench.CellFailed || rec.Cells[0].Note != "cancelled mid-cell" {
				t.Errorf("cell 0: %s %q", rec.Cells[0].Status, rec.Cells[0].Note)
			}
			if rec.Cells[1].Status != bench.CellFailed || !strings.Contains(rec.Cells[1].Note, "not run") {
				t.Errorf("cell 1: %s %q", rec.Cells[1].Status, rec.Cells[1].Note)
			}
			if strings.Contains(out.String(), "=== reference-sim/reference/never-started ===") {
				t.Error("a cell line for a cell that never started")
			}
			if pgid == 0 {
				t.Fatal("no server pid in the output")
			}
			if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("the server's process group %d is still there (kill -0: %v)", pgid, err)
			}
		})
	}
}

// A cell whose server never gets ready, crashes mid-phase or sends no
// usage fails with the reason and the server's stderr, its process group
// is gone, and the cell after it is still measured.
func TestFailingServers(t *testing.T) {
	never := engineCell(bench.KindTree, "never-ready", "--load-ms", "60000")
	never.Server.ReadyTimeoutMs = 1500 // ample for the engine to start and say so on stderr
	tests := []struct {
		name        string
		cell        bench.Cell
		noteHas     string
		problemHas  string
		stderrHas   string
		maxAttempts int
	}{
		{"ready timeout", never, "cold start: not ready after 1.50 s", "not ready after", "reference engine", 0},
		{"crash mid-phase", fakeServerCell("crash"), "the server exited", "phase decode failed (attempt 1, giving up)", "simulated crash", 1},
		// Token counts come from usage only: a stream without it is a
		// failed phase, retried once, never counted from the request.
		{"no usage", fakeServerCell("no-usage"), "decode failed twice", "carried no usage", "", 2},
	}
	small := bench.Phases{DecodeRuns: 2, DecodeTokens: 8, ColdPromptTokens: 50, ColdRuns: 1, WarmRuns: 1,
		LongContextTokens: -1, Concurrency: 2, ConcurrentTokens: 8}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			good := engineCell(bench.KindTree, "good", "--decode-rate", fmt.Sprint(timedRate), "--prefill-rate", "100000", "--load-ms", "0")
			plan := bench.Plan{Scope: bench.ScopeAll, Cells: []bench.Cell{tt.cell, good}, Phases: small}
			started := regexp.MustCompile(`\(pid (\d+)\)`)
			out := &syncBuffer{}
			rec, _ := runPlan(t, context.Background(), plan, out)
			if rec.ExitCode != ExitIncomplete || rec.Complete {
				t.Fatalf("exit %d complete %v, want %d and incomplete", rec.ExitCode, rec.Complete, ExitIncomplete)
			}
			c := rec.Cells[0]
			if c.Status != bench.CellFailed || !strings.Contains(c.Note, tt.noteHas) || !strings.Contains(c.StderrTail, tt.stderrHas) {
				t.Errorf("cell: status %q note %q stderr %q; want failed, note with %q, stderr with %q", c.Status, c.Note, c.StderrTail, tt.noteHas, tt.stderrHas)
			}
			if !strings.Contains(strings.Join(c.Problems, "\n"), tt.problemHas) {
				t.Errorf("problems %q lack %q", c.Problems, tt.problemHas)
			}
			for _, s := range c.Samples {
				if s.Attempt > tt.maxAttempts {
					t.Errorf("sample of attempt %d, want at most %d", s.Attempt, tt.maxAttempts)
				}
				if s.CompletionTokens != 0 && s.Error == "" {
					t.Errorf("a failed cell's sample counted %d tokens", s.CompletionTokens)
				}
			}
			if rec.Cells[1].Status != bench.CellMeasured {
				t.Errorf("the next cell: %s %q", rec.Cells[1].Status, rec.Cells[1].Note)
			}
			m := started.FindStringSubmatch(out.String())
			if m == nil {
				t.Fatalf("no server pid in\n%s", out)
			}
			pgid, _ := strconv.Atoi(m[1])
			if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("the failed server's process group %d is still there (kill -0: %v)", pgid, err)
			}
		})
	}
}
