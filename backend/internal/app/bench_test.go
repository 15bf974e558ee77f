package app

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/history"
	"github.com/mlx-bun/mlx-metrics/backend/internal/jobs"
	"github.com/mlx-bun/mlx-metrics/backend/internal/jobs/jobstest"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

func TestMain(m *testing.M) {
	jobstest.Main() // the job service's runner, in the bench tests
	os.Exit(m.Run())
}

// benchConfig is bench-serve's configuration with serve's defaults and
// the scripted runner (jobstest).
func benchConfig() BenchConfig {
	argv, env := jobstest.RunnerArgv()
	return BenchConfig{Grace: jobs.DefaultGrace, MaxQueued: jobs.DefaultMaxQueued, Runner: argv, RunnerEnv: env}
}

func TestOpenBenchSeedsProfiles(t *testing.T) {
	home := t.TempDir()
	b, err := OpenBench(home, "no GPU found", benchConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	for _, name := range []string{"smoke", "standard"} {
		if _, err := os.Stat(filepath.Join(home, "metrics", "bench", "plans", name+".json")); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "metrics", "history")); err != nil {
		t.Error(err)
	}
	if s := b.lease.State(); s.Held || s.Device != "no GPU found" {
		t.Errorf("lease = %+v", s)
	}
}

// TestStopWithAFollowedRun stops the backend the way serve does while a
// client follows a running job's event stream, as Start does: the
// server part, started after bench-serve, stops its runs first (StopRuns),
// which ends the run (failed: the backend stopped) and so the stream, which
// would otherwise hold the server's shutdown open until the run ended on
// its own; the history still answers then, and closes with bench-serve.
func TestStopWithAFollowedRun(t *testing.T) {
	home := t.TempDir()
	b, err := OpenBench(home, "no GPU found", benchConfig())
	if err != nil {
		t.Fatal(err)
	}
	parts := new(App)
	defer parts.Close(context.Background())
	parts.Add(b)
	data, _ := json.Marshal(jobstest.Plan("block", 1))
	if err := os.WriteFile(b.plans.FileFor("block"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + server.APIPrefix
	client := &http.Client{Timeout: time.Minute} // a safeguard against a hang
	historyAtShutdown := make(chan int, 1)
	parts.Add(Serve(server.New(server.Options{}, Routes(parts.Handlers())...), ln, func(ctx context.Context) error {
		err := b.StopRuns(ctx)
		// A request still being answered when the server shuts down
		// reads the history.
		status := 0
		if res, err := client.Get(base + "/history"); err == nil {
			status = res.StatusCode
			res.Body.Close()
		}
		historyAtShutdown <- status
		return err
	}))

	res, err := client.Post(base+"/bench", "application/json", strings.NewReader(`{"profile":"block"}`))
	if err != nil {
		t.Fatal(err)
	}
	var j bench.Job
	json.NewDecoder(res.Body).Decode(&j)
	res.Body.Close()
	if res.StatusCode != 202 {
		t.Fatalf("POST /bench: %d %+v", res.StatusCode, j)
	}
	req, _ := http.NewRequest("GET", base+"/bench/"+j.ID+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	stream, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	sc := bufio.NewScanner(stream.Body)
	for sc.Scan() && sc.Text() != "event: "+bench.EventStage { // the cell started
	}

	// serve's order on a signal: the server part closes first, and ends
	// bench-serve before its Shutdown.
	shut := make(chan error, 1)
	go func() { shut <- parts.Close(context.Background()) }()
	last := ""
	for sc.Scan() {
		if kind, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			last = kind
		}
	}
	if last != bench.EventFailed {
		t.Fatalf("the stream ended with %q, want %q", last, bench.EventFailed)
	}
	select {
	case err := <-shut:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute): // a safeguard against a hang
		t.Fatal("the server's shutdown is held open")
	}
	if status := <-historyAtShutdown; status != http.StatusOK {
		t.Errorf("GET /history as the server shut down: %d, want 200", status)
	}
	// The history closed with bench-serve: it opens again.
	h, err := history.Open(filepath.Join(home, "metrics", "history"), history.Options{})
	if err != nil {
		t.Fatalf("the history was left open: %v", err)
	}
	h.Close()
	if j, _ = b.jobs.Get(j.ID); j.Status != bench.StatusFailed || j.Error != jobs.MsgStoppedDuringRun {
		t.Fatalf("job = %+v", j)
	}
	hist, err := history.Open(filepath.Join(home, "metrics", "history"), history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer hist.Close()
	if _, err := hist.Get(j.ID); err != nil {
		t.Fatalf("the run's record is not in history: %v", err)
	}
}

// TestOpenBenchDegraded: storage that cannot open does not stop serve: the
// bench and history routes answer 503 with the reason (no server path in
// it), /healthz's storage section says degraded, and closing is safe.
func TestOpenBenchDegraded(t *testing.T) {
	tests := []struct {
		name string
		home func(t *testing.T) string
	}{
		{"home is a file", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "home")
			os.WriteFile(p, []byte("x"), 0o644)
			return p
		}},
		{"history is a file", func(t *testing.T) string {
			home := t.TempDir()
			os.MkdirAll(filepath.Join(home, "metrics"), 0o755)
			os.WriteFile(filepath.Join(home, "metrics", "history"), []byte("x"), 0o644)
			return home
		}},
		{"history held by another backend", func(t *testing.T) string {
			home := t.TempDir()
			h, err := history.Open(filepath.Join(home, "metrics", "history"), history.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { h.Close() })
			return home
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := tt.home(t)
			b, err := OpenBench(home, "no GPU found", benchConfig())
			if err != nil {
				t.Fatalf("OpenBench: %v (want degraded, not an error)", err)
			}
			defer b.Close(context.Background())
			if b.degraded == "" || strings.Contains(b.degraded, home) {
				t.Fatalf("degraded = %q", b.degraded)
			}
			if h := b.health().(map[string]any); h["status"] != "degraded" || h["reason"] != b.degraded {
				t.Fatalf("health = %+v", h)
			}
			app := server.New(server.Options{}, Routes(Handlers{Bench: b.api})...)
			for _, r := range []struct{ method, path string }{
				{"GET", "/bench"}, {"POST", "/bench"}, {"GET", "/bench/profiles"}, {"GET", "/bench/x/events"},
				{"GET", "/history"}, {"GET", "/history?format=csv"}, {"DELETE", "/history/x"},
			} {
				req := httptest.NewRequest(r.method, server.APIPrefix+r.path, strings.NewReader(`{"profile":"smoke"}`))
				req.Header.Set("Content-Type", "application/json")
				res, err := app.Test(req, -1)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(res.Body)
				var e struct {
					Error struct{ Message, Type string }
				}
				if res.StatusCode != 503 || json.Unmarshal(body, &e) != nil || e.Error.Type != "server_error" ||
					!strings.Contains(e.Error.Message, "bench-serve is unavailable") || strings.Contains(e.Error.Message, home) {
					t.Fatalf("%s %s: %d %s", r.method, r.path, res.StatusCode, body)
				}
			}
			if err := b.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}
