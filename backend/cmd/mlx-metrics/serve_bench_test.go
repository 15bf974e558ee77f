package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// asMainEnv makes the test binary act as mlx-metrics itself, so the job
// service can run the real runner (`bench run`) and the runner the real
// reference engine (`{self} engine`), both through this binary.
const asMainEnv = "MLX_METRICS_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:])
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func TestOpenBenchSeedsProfiles(t *testing.T) {
	home := t.TempDir()
	b, err := openBench(home, "no GPU found", &benchConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
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
	b, err := openBench(home, "no GPU found", &benchConfig{
		grace:     10 * time.Second,
		runner:    []string{os.Args[0], "bench", "run"},
		runnerEnv: []string{asMainEnv + "=1", "GORACE=atexit_sleep_ms=0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
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
