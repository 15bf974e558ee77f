package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/app"
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
		ctx, stop := signalContext()
		code := run(ctx, os.Args[1:])
		stop()
		os.Exit(code)
	}
	if os.Getenv(stuckStopEnv) == "1" {
		stuckStop()
	}
	if os.Getenv(killParentEnv) != "" {
		os.Exit(killParent())
	}
	os.Exit(m.Run())
}

// defaultBenchConfig is serve's bench-serve configuration with no flags.
func defaultBenchConfig() app.BenchConfig {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var c app.BenchConfig
	addBenchFlags(fs, &envDefaults{}, &c)
	fs.Parse(nil) // the defaults: nothing to fail
	return c
}

// realRunner is serve's bench-serve configuration running the real runner
// (`bench run`) as this test binary (asMainEnv), with a 10 s grace.
func realRunner() app.BenchConfig {
	cfg := defaultBenchConfig()
	cfg.Grace = 10 * time.Second
	cfg.Runner = []string{os.Args[0], "bench", "run"}
	cfg.RunnerEnv = []string{asMainEnv + "=1", "GORACE=atexit_sleep_ms=0"}
	return cfg
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
			var cfg app.BenchConfig
			addBenchFlags(fs, &env, &cfg)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			// As runServe does: a malformed environment value is refused
			// before anything opens.
			err := env.err()
			if err != nil {
				err = &exitError{code: 2, err: err}
			} else {
				var b *app.Bench
				if b, err = app.OpenBench(t.TempDir(), "no GPU found", cfg); err == nil {
					defer b.Close(context.Background())
					if g := b.Jobs().Grace(); g != tt.grace {
						t.Fatalf("grace %v, want %v", g, tt.grace)
					}
				}
				err = startError(err) // serve's exit code for app's error
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

// TestSmokeEndToEnd runs the shipped smoke profile through the API: the
// real runner process measuring the real reference engine, into history.
func TestSmokeEndToEnd(t *testing.T) {
	home := t.TempDir()
	b, err := app.OpenBench(home, "no GPU found", realRunner())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	srv := server.New(server.Options{}, routesOf(b)...)
	get := func(path string, v any) string {
		t.Helper()
		res, err := srv.Test(httptest.NewRequest("GET", server.APIPrefix+path, nil), -1)
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
	res, err := srv.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	var v bench.JobView
	json.NewDecoder(res.Body).Decode(&v)
	j := v.Job()
	res.Body.Close()
	if res.StatusCode != 202 {
		t.Fatalf("POST /bench: %d %+v", res.StatusCode, j)
	}
	done, err := b.Jobs().Done(j.ID)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(2 * time.Minute): // a safeguard against a hang
		t.Fatal("the smoke run did not end")
	}
	get("/bench/"+j.ID, &v)
	j = v.Job()
	if j.Status != bench.StatusDone || j.Progress != 1 || *j.ExitCode != 0 {
		t.Fatalf("job = %+v", j)
	}
	var ev bench.RunView
	get("/history/"+j.ID, &ev)
	e := ev.Entry()
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
