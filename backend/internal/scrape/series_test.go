package scrape

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/backend/internal/store"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// rank is one series of generated tokens in an engine's exposition: a
// model's engine rank generating rate tokens a second, whose counter
// starts again from 0 right after restart (when not zero).
type rank struct {
	model, engine string
	rate          float64
	restart       time.Duration
}

// engineAt serves a vLLM exposition of ranks whose counters stand where
// the clock says.
func engineAt(t *testing.T, clk clock.Clock, t0 time.Time, ranks ...rank) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elapsed := clk.Now().Sub(t0)
		var b strings.Builder
		for _, rk := range ranks {
			since := elapsed
			if rk.restart > 0 && elapsed > rk.restart {
				since = elapsed - rk.restart
			}
			lab := fmt.Sprintf(`{engine=%q,model_name=%q}`, rk.engine, rk.model)
			fmt.Fprintf(&b, "vllm:num_requests_running%s 1\nvllm:num_requests_waiting%s 0\nvllm:generation_tokens_total%s %g\n",
				lab, lab, lab, rk.rate*since.Seconds())
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write([]byte(b.String()))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Several engines feed one throughput series without making it jump: the
// issue saw 54, 697, 650, 755, 1,353 tok/s while the engines made about
// 1,460 together, each point then holding the engines polled in its
// millisecond only. Every point, once each engine has a rate, is their sum.
func TestThroughputSeriesDoesNotJump(t *testing.T) {
	t0 := time.UnixMilli(1_764_690_000_000)
	const total = 1460.0
	tests := []struct {
		name    string
		engines [][]rank        // one target each
		offsets []time.Duration // each target's poll within a round
	}{
		{
			name:    "three targets polled at their own moments",
			engines: [][]rank{{{"small", "0", 60, 0}}, {{"mid", "0", 700, 0}}, {{"big", "0", 700, 0}}},
			offsets: []time.Duration{0, 700 * time.Millisecond, 1400 * time.Millisecond},
		},
		{
			name: "one exposition of two models and two ranks, one rank restarting",
			// Rank 1 restarts right after the fourth poll: its tokens since
			// count from 0, as Prometheus' increase() reads a reset.
			engines: [][]rank{{{"a", "0", 500, 0}, {"a", "1", 500, 6300 * time.Millisecond}, {"b", "0", 460, 0}}},
			offsets: []time.Duration{300 * time.Millisecond},
		},
		{
			name:    "two targets polled a few ms apart",
			engines: [][]rank{{{"a", "0", 730, 0}}, {{"b", "0", 730, 0}}},
			offsets: []time.Duration{995 * time.Millisecond, 1003 * time.Millisecond},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(t0)
			st := store.New(t0.UnixMilli(), store.Options{})
			var scrapers []*Scraper
			for _, ranks := range tc.engines {
				srv := engineAt(t, clk, t0, ranks...)
				target, err := ParseTarget(srv.URL + ",vllm")
				if err != nil {
					t.Fatal(err)
				}
				scrapers = append(scrapers, New(target, func(ev events.Event) { st.Apply(ev) },
					Options{Clock: clk, Logger: logging.Func(func(_ slog.Level, msg string) { t.Log(msg) })}))
			}
			// Rounds of 2 s, each target at its offset in the round.
			const interval = 2 * time.Second
			for round := range 8 {
				start := t0.Add(time.Duration(round) * interval)
				for i, s := range scrapers {
					clk.Advance(start.Add(tc.offsets[i]).Sub(clk.Now()))
					if _, err := s.Poll(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
			}
			warm := t0.Add(interval + tc.offsets[len(tc.offsets)-1]).UnixMilli() // every target polled twice
			var points []float64
			for _, p := range st.Snapshot(clk.Now().UnixMilli()).Series {
				if p.At >= warm {
					points = append(points, math.Round(p.TokensPerSecond))
				}
			}
			if len(points) < 6 {
				t.Fatalf("%d points after every target had a rate", len(points))
			}
			for _, p := range points {
				if math.Abs(p-total) > total/100 {
					t.Fatalf("series %v, want every point near %g tok/s", points, total)
				}
			}
		})
	}
}
