package runner

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/gpu/engine"
	"github.com/mlx-bun/mlx-metrics/gpu/engine/enginetest"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// timedRate is the test engines' decode rate: tokens 10 ms apart, so even
// a client the race detector and a loaded machine hold up reads a run's 8
// tokens in more than one read, and their arrival stamps time it. At 2000
// tok/s a whole run could arrive in one read (1 test in 30 under
// scripts/stress), and its rate is then rightly unmeasurable.
const timedRate = 100

// serveEngine runs the reference engine in this process on 127.0.0.1,
// with wrap (when set) in front of its handler: the "already running"
// server that attach mode measures.
func serveEngine(t *testing.T, wrap func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	cfg := engine.DefaultConfig()
	cfg.LoadTime, cfg.DecodeRate, cfg.PrefillRate = 0, timedRate, 100000
	var h http.Handler = enginetest.Run(t, cfg, engine.Options{}).Handler()
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func attachedCell(conf, baseURL string) bench.Cell {
	return bench.Cell{
		Model: "reference-sim", Kind: bench.KindTree, Configuration: conf,
		Server: bench.Server{Attach: true, BaseURL: baseURL},
	}
}

var smallPhases = bench.Phases{DecodeRuns: 2, DecodeTokens: 8, ColdPromptTokens: 50, ColdRuns: 1, WarmRuns: 1,
	LongContextTokens: -1, Concurrency: 2, ConcurrentTokens: 8}

// An attached cell measures the server at the plan's URL, starts and stops
// nothing, and records its cold start as not applicable.
func TestAttachMeasuresRunningServer(t *testing.T) {
	no404Models := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/models" {
				http.NotFound(w, r)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	tests := []struct {
		name      string
		wrap      func(http.Handler) http.Handler
		readyURL  func(base string) string
		wantCheck string // in the progress output
	}{
		{"ready at /v1/models", nil, nil, "/v1/models or "},
		{"no /v1/models: ready at /health", no404Models, nil, "/health"},
		{"the plan's ready url", nil, func(base string) string { return base + "/health" }, "checking http"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serveEngine(t, tt.wrap)
			cell := attachedCell("attached", srv.URL+"/v1/")
			if tt.readyURL != nil {
				cell.Server.ReadyURL = tt.readyURL(srv.URL)
			}
			plan := bench.Plan{Scope: bench.ScopeAll, Cells: []bench.Cell{cell}, Phases: smallPhases}
			out := &syncBuffer{}
			rec, dir := runPlan(t, context.Background(), plan, out)
			if rec.ExitCode != ExitComplete || !rec.Complete {
				t.Fatalf("exit %d complete %v problems %q\n%s", rec.ExitCode, rec.Complete, rec.Problems, out)
			}
			c := rec.Cells[0]
			if c.Status != bench.CellMeasured || !c.Attached || c.ColdStartMs != nil || c.PeakRSSBytes != 0 || c.PeakGPUMemoryBytes != nil {
				t.Errorf("cell %+v, want measured, attached, no cold start or memory", c)
			}
			if cc := bench.CompactCellOf(c); cc.DecodeTokensPerSecond == nil || cc.ColdStartMs != nil || !cc.Attached {
				t.Errorf("compact cell %+v", cc)
			}
			if !strings.Contains(out.String(), "attached to "+srv.URL+"/v1") || !strings.Contains(out.String(), tt.wantCheck) || strings.Contains(out.String(), "started ") {
				t.Errorf("progress output:\n%s", out)
			}
			runJSON, _ := os.ReadFile(filepath.Join(dir, "run.json"))
			if !strings.Contains(string(runJSON), `"coldStartMs": null`) || !strings.Contains(string(runJSON), `"attached": true`) {
				t.Errorf("run.json does not record the cold start as null for an attached cell:\n%s", runJSON)
			}
			report, _ := os.ReadFile(filepath.Join(dir, "report.md"))
			if !strings.Contains(string(report), "| n/a (attached) |") {
				t.Errorf("report.md lacks n/a (attached):\n%s", report)
			}
			if logs, _ := filepath.Glob(filepath.Join(dir, "logs", "*")); len(logs) != 0 {
				t.Errorf("server logs for a server the run did not start: %v", logs)
			}
			// Nothing stopped it.
			resp, err := http.Get(srv.URL + "/health")
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("the attached server after the run: %v %v", resp, err)
			}
			resp.Body.Close()
		})
	}
}

// A readiness check that cannot succeed fails the cell at once with the
// URLs it tried, instead of waiting out the ready timeout; the next cell
// is still measured.
func TestAttachFailsFast(t *testing.T) {
	var notFoundHits atomic.Int64
	notFound := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		notFoundHits.Add(1)
		http.NotFound(w, r)
	}))
	defer notFound.Close()
	unauthorized := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no key", http.StatusUnauthorized)
	}))
	defer unauthorized.Close()
	loading := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "loading", http.StatusServiceUnavailable)
	}))
	defer loading.Close()
	closed := closedPort(t)

	tests := []struct {
		name    string
		cell    func() bench.Cell
		noteHas []string
		maxHits int64 // requests the 404 server may see; 0: not checked
	}{
		{"404 on /v1/models and /health", func() bench.Cell { return attachedCell("404", notFound.URL+"/v1") },
			[]string{"attach: the attached server is not ready", notFound.URL + "/v1/models answered 404 Not Found", notFound.URL + "/health answered 404 Not Found", "OpenAI API root"}, 2},
		{"401", func() bench.Cell { return attachedCell("401", unauthorized.URL+"/v1") },
			[]string{unauthorized.URL + "/v1/models answered 401 Unauthorized"}, 0},
		{"connection refused", func() bench.Cell { return attachedCell("refused", "http://"+closed+"/v1") },
			[]string{"the attached server is not running", "nothing listens at http://" + closed + "/v1/models (connection refused)"}, 0},
		{"503 until the ready timeout", func() bench.Cell {
			c := attachedCell("503", loading.URL+"/v1")
			c.Server.ReadyTimeoutMs = 300
			return c
		}, []string{"not ready after 300 ms", "answered 503 Service Unavailable"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			notFoundHits.Store(0)
			good := serveEngine(t, nil)
			plan := bench.Plan{Scope: bench.ScopeAll, Cells: []bench.Cell{tt.cell(), attachedCell("good", good.URL+"/v1")}, Phases: smallPhases}
			if err := plan.Validate(); err != nil {
				t.Fatal(err)
			}
			out := &syncBuffer{}
			rec, err := Run(context.Background(), Options{Plan: plan, OutDir: t.TempDir(), Out: out, AttachGrace: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if rec.ExitCode != ExitIncomplete {
				t.Fatalf("exit %d, want %d\n%s", rec.ExitCode, ExitIncomplete, out)
			}
			c := rec.Cells[0]
			for _, want := range tt.noteHas {
				if c.Status != bench.CellFailed || !strings.Contains(c.Note, want) {
					t.Errorf("cell %s %q, want failed with %q", c.Status, c.Note, want)
				}
			}
			if !strings.Contains(out.String(), "  problem: reference-sim/tree/"+c.Configuration+": attach: ") {
				t.Errorf("no problem line in\n%s", out)
			}
			// Fail-fast without a clock: one check of each URL, no polling.
			if tt.maxHits > 0 && notFoundHits.Load() > tt.maxHits {
				t.Errorf("the 404 server saw %d requests, want %d: the runner kept polling", notFoundHits.Load(), tt.maxHits)
			}
			if rec.Cells[1].Status != bench.CellMeasured {
				t.Errorf("the next cell: %s %q", rec.Cells[1].Status, rec.Cells[1].Note)
			}
		})
	}
}

// closedPort is a loopback address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// An attached server that stops listening mid-phase fails its cell as
// gone after the grace (not every later phase twice); one the run was
// cancelled against is left running.
func TestAttachedServerGoneOrCancelled(t *testing.T) {
	t.Run("stops listening mid-phase", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg := engine.DefaultConfig()
		cfg.LoadTime = 0
		h := enginetest.Run(t, cfg, engine.Options{}).Handler()
		hs := &http.Server{}
		hs.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				// The server goes away: nothing listens, no connection stays.
				l.Close()
				hs.SetKeepAlivesEnabled(false)
				panic(http.ErrAbortHandler)
			}
			h.ServeHTTP(w, r)
		})
		go hs.Serve(l)
		defer hs.Close()
		good := serveEngine(t, nil)
		plan := bench.Plan{Scope: bench.ScopeAll, Phases: smallPhases, Cells: []bench.Cell{
			attachedCell("gone", "http://"+l.Addr().String()+"/v1"), attachedCell("good", good.URL+"/v1")}}
		rec, err := Run(context.Background(), Options{Plan: plan, OutDir: t.TempDir(), Out: &syncBuffer{}, AttachGrace: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		c := rec.Cells[0]
		if c.Status != bench.CellFailed || !strings.Contains(c.Note, "the attached server is not running") {
			t.Errorf("cell %s %q, want failed as not running", c.Status, c.Note)
		}
		for _, s := range c.Samples {
			if s.Attempt > 1 || s.Phase != bench.PhaseDecode {
				t.Errorf("sample %+v: only decode's first attempt should have run", s)
			}
		}
		if rec.Cells[1].Status != bench.CellMeasured {
			t.Errorf("the next cell: %s %q", rec.Cells[1].Status, rec.Cells[1].Note)
		}
	})
	t.Run("cancelled mid-phase", func(t *testing.T) {
		srv := serveEngine(t, nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		out := &syncBuffer{onLine: func(l string) {
			if strings.HasPrefix(l, "phase decode") {
				cancel()
			}
		}}
		plan := bench.Plan{Scope: bench.ScopeAll, Phases: smallPhases, Cells: []bench.Cell{attachedCell("attached", srv.URL+"/v1")}}
		rec, err := Run(ctx, Options{Plan: plan, OutDir: t.TempDir(), Out: out})
		if err != nil {
			t.Fatal(err)
		}
		if !rec.Cancelled || rec.ExitCode != ExitCancelled || rec.Cells[0].Note != "cancelled mid-cell" {
			t.Errorf("cancelled %v exit %d note %q", rec.Cancelled, rec.ExitCode, rec.Cells[0].Note)
		}
		resp, err := http.Get(srv.URL + "/health")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("the attached server after a cancelled run: %v %v", resp, err)
		}
		resp.Body.Close()
	})
}

// Connection refused is retried for the grace: a server that starts
// listening after the run's first check is measured.
func TestAttachWaitsForAServerStarting(t *testing.T) {
	addr := closedPort(t)
	cfg := engine.DefaultConfig()
	cfg.LoadTime, cfg.DecodeRate, cfg.PrefillRate = 0, timedRate, 100000
	hs := &http.Server{Handler: enginetest.Run(t, cfg, engine.Options{}).Handler()}
	defer hs.Close()
	listenErr := make(chan error, 1)
	out := &syncBuffer{onLine: func(l string) {
		// The progress line comes just before the first check, which
		// then finds nothing listening.
		if strings.HasPrefix(l, "attached to ") {
			go func() {
				// Not synchronisation (either order passes): it makes the
				// first check find nothing listening, so the retry is what
				// is tested.
				time.Sleep(50 * time.Millisecond)
				l, err := net.Listen("tcp", addr)
				listenErr <- err
				if err == nil {
					hs.Serve(l)
				}
			}()
		}
	}}
	plan := bench.Plan{Scope: bench.ScopeAll, Phases: smallPhases, Cells: []bench.Cell{attachedCell("starting", "http://"+addr+"/v1")}}
	rec, err := Run(context.Background(), Options{Plan: plan, OutDir: t.TempDir(), Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-listenErr; err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	if rec.ExitCode != ExitComplete || rec.Cells[0].Status != bench.CellMeasured {
		t.Fatalf("exit %d cell %s %q\n%s", rec.ExitCode, rec.Cells[0].Status, rec.Cells[0].Note, out)
	}
}
