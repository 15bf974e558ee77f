package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/app"
	"github.com/mlx-bun/mlx-metrics/backend/internal/history"
	"github.com/mlx-bun/mlx-metrics/backend/internal/jobs"
	"github.com/mlx-bun/mlx-metrics/backend/internal/jobs/jobstest"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// asMainEnv makes the test binary act as mlx-metrics itself, so the job
// service can run the real runner (`bench run`) and the runner the real
// reference engine (`{self} engine`), both through this binary.
const asMainEnv = "MLX_METRICS_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	jobstest.Main()
	if os.Getenv(asMainEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:])
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// defaultBenchConfig is serve's bench-serve configuration with no flags.
func defaultBenchConfig(t *testing.T) *benchConfig {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c := addBenchFlags(fs, &envDefaults{})
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBenchFlags(t *testing.T) {
	tests := []struct {
		env   string // MLX_METRICS_BENCH_GRACE
		args  []string
		grace time.Duration // the grace it opens with
		err   string        // empty: opens
	}{
		{"", nil, jobs.DefaultGrace, ""},
		{"", []string{"-bench-grace", "5s", "-bench-queue", "1"}, 5 * time.Second, ""},
		{"2m", nil, 2 * time.Minute, ""},
		{"2m", []string{"-bench-grace", "5s"}, 5 * time.Second, ""},
		{"", []string{"-bench-grace", "0s"}, 0, "-bench-grace 0s"},
		{"", []string{"-bench-grace", "-1m"}, 0, "-bench-grace -1m0s"},
		{"", []string{"-bench-queue", "0"}, 0, "-bench-queue 0"},
		{"", []string{"-bench-queue", "-3"}, 0, "-bench-queue -3"},
		{"30", nil, 0, `MLX_METRICS_BENCH_GRACE "30"`},
		{"-5s", nil, 0, "-bench-grace -5s"},
	}
	for _, tt := range tests {
		t.Run(tt.env+" "+strings.Join(tt.args, " "), func(t *testing.T) {
			t.Setenv("MLX_METRICS_BENCH_GRACE", tt.env)
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			var env envDefaults
			cfg := addBenchFlags(fs, &env)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			// As runServe does: a malformed environment value is refused
			// before anything opens.
			err := env.err()
			if err != nil {
				err = &exitError{code: 2, err: err}
			} else {
				var b *benchServe
				if b, err = openBench(t.TempDir(), "no GPU found", cfg); err == nil {
					defer b.Close(context.Background())
					if g := b.jobs.Grace(); g != tt.grace {
						t.Fatalf("grace %v, want %v", g, tt.grace)
					}
				}
			}
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("error %v, want exit 2 mentioning %q", err, tt.err)
			}
		})
	}
}

func TestOpenBenchSeedsProfiles(t *testing.T) {
	home := t.TempDir()
	b, err := openBench(home, "no GPU found", defaultBenchConfig(t))
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

// TestSmokeEndToEnd runs the shipped smoke profile through the API: the
// real runner process measuring the real reference engine, into history.
func TestSmokeEndToEnd(t *testing.T) {
	home := t.TempDir()
	cfg := defaultBenchConfig(t)
	cfg.grace = 10 * time.Second
	cfg.runner = []string{os.Args[0], "bench", "run"}
	cfg.runnerEnv = []string{asMainEnv + "=1", "GORACE=atexit_sleep_ms=0"}
	b, err := openBench(home, "no GPU found", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	app := server.New(server.Options{}, b.api)
	get := func(path string, v any) string {
		t.Helper()
		res, err := app.Test(httptest.NewRequest("GET", server.APIPrefix+path, nil), -1)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		data, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, res.StatusCode, data)
		}
		if v != nil {
			if err := json.Unmarshal(data, v); err != nil {
				t.Fatal(err)
			}
		}
		return string(data)
	}

	req := httptest.NewRequest("POST", server.APIPrefix+"/bench", strings.NewReader(`{"profile":"smoke"}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	var j bench.Job
	json.NewDecoder(res.Body).Decode(&j)
	res.Body.Close()
	if res.StatusCode != 202 {
		t.Fatalf("POST /bench: %d %+v", res.StatusCode, j)
	}
	done, err := b.jobs.Done(j.ID)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(2 * time.Minute): // a safeguard against a hang
		t.Fatal("the smoke run did not end")
	}
	get("/bench/"+j.ID, &j)
	if j.Status != bench.StatusDone || j.Progress != 1 || *j.ExitCode != 0 {
		t.Fatalf("job = %+v", j)
	}
	var e bench.HistoryEntry
	get("/history/"+j.ID, &e)
	if !e.Complete || len(e.Cells) == 0 {
		t.Fatalf("entry = %+v", e)
	}
	for _, c := range e.Cells {
		if c.Status != bench.CellMeasured || c.DecodeTokensPerSecond == nil || *c.DecodeTokensPerSecond <= 0 ||
			c.TTFTColdMs == nil || c.AggregateTokensPerSecond == nil || c.ColdStartMs == nil {
			t.Errorf("cell = %+v", c)
		}
	}
	if rep := get("/bench/"+j.ID+"/report", nil); !strings.Contains(rep, j.ID) {
		t.Errorf("report = %s", rep)
	}
}

// TestStopWithAFollowedRun stops the backend the way serve does while a
// client follows a running job's event stream, through internal/app: the
// server part, started after bench-serve, closes it first (CloseFirst), which
// ends the run (failed: the backend stopped) and so the stream, which would
// otherwise hold the server's shutdown open until the run ended on its own.
func TestStopWithAFollowedRun(t *testing.T) {
	home := t.TempDir()
	cfg := defaultBenchConfig(t)
	cfg.runner, cfg.runnerEnv = jobstest.RunnerArgv()
	b, err := openBench(home, "no GPU found", cfg)
	if err != nil {
		t.Fatal(err)
	}
	parts := new(app.App)
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
	parts.Add(app.Serve(server.New(server.Options{}, parts.Features()...), ln, func(ctx context.Context) error {
		return parts.CloseFirst(ctx, b)
	}))
	base := "http://" + ln.Addr().String() + server.APIPrefix
	client := &http.Client{Timeout: time.Minute} // a safeguard against a hang

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
			b, err := openBench(home, "no GPU found", defaultBenchConfig(t))
			if err != nil {
				t.Fatalf("openBench: %v (want degraded, not an error)", err)
			}
			defer b.Close(context.Background())
			if b.degraded == "" || strings.Contains(b.degraded, home) {
				t.Fatalf("degraded = %q", b.degraded)
			}
			if h := b.health().(map[string]any); h["status"] != "degraded" || h["reason"] != b.degraded {
				t.Fatalf("health = %+v", h)
			}
			app := server.New(server.Options{}, b.api)
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
