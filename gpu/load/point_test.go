package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/gpu/engine"
	"github.com/mlx-bun/mlx-metrics/gpu/engine/enginetest"
	"github.com/mlx-bun/mlx-metrics/gpu/loadgen"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

func engineURL(t *testing.T) string {
	cfg := engine.DefaultConfig()
	cfg.LoadTime, cfg.DecodeRate, cfg.PrefillRate, cfg.BatchCapacity = 0, 2000, 1e6, 8
	srv := httptest.NewServer(enginetest.Run(t, cfg, engine.Options{}).Handler())
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// A point's requests, open or closed loop, capped or not, by count or by
// duration: every request sent once, written once, in the summary.
func TestPoint(t *testing.T) {
	live := engineURL(t)
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
	}))
	defer refusing.Close()
	for _, tc := range []struct {
		name string
		url  string
		p    point
		load bench.Load
		// want counted requests (-1: by duration, at least 5), ok
		want, ok int
	}{
		{"open loop", live, point{rate: 200}, bench.Load{Requests: 30, WarmupRequests: 3}, 30, 30},
		{"open loop capped", live, point{rate: 500, streams: 2}, bench.Load{Requests: 20}, 20, 20},
		{"closed loop", live, point{streams: 3}, bench.Load{Requests: 25, WarmupRequests: 2}, 25, 25},
		{"by duration", live, point{rate: 100}, bench.Load{DurationMs: 200}, -1, -1},
		// The warm-up outlasts the duration: the duration still counts
		// from the first counted request.
		{"by duration after a long warm-up", live, point{rate: 100}, bench.Load{DurationMs: 100, WarmupRequests: 20}, -1, -1},
		{"closed loop by duration", live, point{streams: 2}, bench.Load{DurationMs: 200}, -1, -1},
		{"refused", refusing.URL + "/v1", point{rate: 200}, bench.Load{Requests: 10}, 10, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.load
			l.Arrival = bench.ArrivalPoisson
			if tc.p.closed() {
				l.Arrival = ""
			}
			l.Workload = bench.Workload{Kind: bench.WorkloadRandom, Input: bench.Lengths{Tokens: 8}, Output: bench.Lengths{Tokens: 4}}
			l = l.Defaults()
			if tc.load.DurationMs > 0 {
				l.Requests = 0
			}
			wl, err := newWorkload(l.Workload, 1)
			if err != nil {
				t.Fatal(err)
			}
			c := loadgen.New(tc.url, loadgen.Options{})
			defer c.Close()
			s := &sender{client: c, model: "reference-sim", load: l, wl: wl, nonce: "t",
				timeout: func(int, int) time.Duration { return 10 * time.Second }}
			tc.p.index, tc.p.repeat = 1, 1
			var buf bytes.Buffer
			lp, err := s.run(context.Background(), tc.p, &buf)
			if err != nil {
				t.Fatal(err)
			}
			lines, seen := 0, map[int]bool{}
			sc := bufio.NewScanner(&buf)
			for sc.Scan() {
				var r bench.RequestRecord
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					t.Fatal(err)
				}
				if seen[r.Index] {
					t.Fatalf("request %d written twice", r.Index)
				}
				seen[r.Index] = true
				lines++
			}
			if lines != lp.Requests+lp.Warmup || lp.Warmup != l.WarmupRequests {
				t.Errorf("%d records, summary %d + %d warm-up", lines, lp.Requests, lp.Warmup)
			}
			if tc.want >= 0 && (lp.Requests != tc.want || lp.Completed != tc.ok) {
				t.Errorf("%d requests %d ok, want %d %d (%q)", lp.Requests, lp.Completed, tc.want, tc.ok, lp.Problems)
			}
			if tc.want < 0 && (lp.Requests < 5 || lp.Completed != lp.Requests) {
				t.Errorf("by duration: %d requests %d ok (%q)", lp.Requests, lp.Completed, lp.Problems)
			}
			if tc.p.streams > 0 && lp.Concurrency != tc.p.streams {
				t.Errorf("concurrency %d", lp.Concurrency)
			}
		})
	}
}
