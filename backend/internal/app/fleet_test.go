package app

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/fleet"
	"github.com/mlx-bun/mlx-metrics/gpu/engine"
	fleetview "github.com/mlx-bun/mlx-metrics/shared/fleet"
	"github.com/mlx-bun/mlx-metrics/shared/promtest"
)

// A real Prometheus scrapes three backends, each fed by its own reference
// engine at a different rate; the fleet view, read from it, lists the
// three hosts with figures that agree with each backend's own count of
// its requests, and a backend killed shows as not reporting, not dropped.
func TestFleetWithRealPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Prometheus and three backends")
	}
	fast := engine.DefaultConfig()
	fast.DecodeRate, fast.PrefillRate, fast.LoadTime = 2000, 1e6, 0
	rates := []float64{2, 5, 10}
	var backends []*Backend
	var targets []string
	for _, rate := range rates {
		cfg := startConfig(t)
		cfg.ReferenceEngine = ReferenceEngineConfig{Enabled: true, Rate: rate, Engine: &fast}
		b, err := Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close(context.Background()) })
		backends = append(backends, b)
		targets = append(targets, b.Addr().String())
	}
	prom := promtest.Start(t, time.Second, promtest.Job{Name: "mlx-metrics", Targets: targets})
	prom.WaitScrapes(t, 12, 2*time.Minute)

	// The fleet view as serve --fleet serves it, over 10 s (the fleet is
	// seconds old; the shipped ranges are 15 min and more).
	client, err := fleet.NewClient(prom.URL, fleet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svc := fleet.NewService(client, fleet.Config{Ranges: []string{"10s"}, CacheFor: time.Nanosecond})
	finished := func(b *Backend) float64 {
		res, err := http.Get("http://" + b.Addr().String() + "/api/metrics/snapshot")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var s struct {
			Requests struct {
				ByFinish map[string]float64 `json:"byFinish"`
			} `json:"requests"`
		}
		json.NewDecoder(res.Body).Decode(&s)
		return s.Requests.ByFinish["stop"] + s.Requests.ByFinish["length"] + s.Requests.ByFinish["cancelled"]
	}
	// Each backend's own count over the same 10 s the view's rates cover.
	before := make([]float64, len(backends))
	for i, b := range backends {
		before[i] = finished(b)
	}
	start := time.Now()
	time.Sleep(10 * time.Second) // the window the rates are over; not synchronisation
	after := make([]float64, len(backends))
	for i, b := range backends {
		after[i] = finished(b)
	}
	elapsed := time.Since(start).Seconds()
	// Prometheus' rate divides the increase its samples show by the whole
	// range: scrapes a busy machine delayed leave part of the window
	// without samples and read as a lower rate (1.88 req/s against a
	// backend's own 4.88, once, at a load average of 11). The view is read
	// once the last 10 s hold every target's scrapes (the traffic is
	// steady: a window a few seconds later reads the same rate).
	if err := prom.Scraped(9, "10s", 30*time.Second); err != nil {
		t.Logf("%v: reading the view anyway", err)
	}
	v, err := svc.View(context.Background(), fleet.Request{Range: "10s"})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Hosts) != 3 {
		t.Fatalf("hosts %+v, want the three backends", v.Hosts)
	}
	for i, b := range backends {
		host := b.Addr().String()
		var row *fleetview.Row
		for j := range v.Rows {
			if v.Rows[j].Host == host {
				row = &v.Rows[j]
			}
		}
		if row == nil || row.RequestsPerSecond == nil || row.TokensPerSecond == nil || row.TTFT.P50 == nil {
			t.Fatalf("%s: row %+v", host, row)
		}
		own := (after[i] - before[i]) / elapsed
		t.Logf("%s (engine at %v req/s): fleet %.2f req/s, %.1f tok/s, TTFT p50 %.3f s; its own count %.2f req/s",
			host, rates[i], *row.RequestsPerSecond, *row.TokensPerSecond, *row.TTFT.P50, own)
		// Prometheus' rate over 10 s of 1 s scrapes, against the
		// backend's count over 10 s of wall time: within the scrapes'
		// resolution and the traffic's Poisson noise.
		if got := *row.RequestsPerSecond; math.Abs(got-own) > 0.35*own+1 {
			t.Errorf("%s (engine at %v req/s): fleet %.2f req/s, its own count %.2f req/s", host, rates[i], got, own)
		}
	}
	// Over a range far longer than the store holds (it is seconds old),
	// the rates are over the time each series has existed: as the 10 s
	// view's, not a fraction of them.
	long, err := fleet.NewService(client, fleet.Config{Ranges: []string{"10m"}, CacheFor: time.Nanosecond}).View(context.Background(), fleet.Request{Range: "10m"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range long.Rows {
		for _, s := range v.Rows {
			if s.Host == r.Host && s.Model == r.Model && r.RequestsPerSecond != nil && s.RequestsPerSecond != nil {
				t.Logf("%s: %.2f req/s over 10m, %.2f over 10s", r.Host, *r.RequestsPerSecond, *s.RequestsPerSecond)
				if got, want := *r.RequestsPerSecond, *s.RequestsPerSecond; math.Abs(got-want) > 0.5*want+1 {
					t.Errorf("%s: %.2f req/s over 10m, %.2f over 10s: the long range reads the store's short history as idle", r.Host, got, want)
				}
			}
		}
	}
	if a, c := v.Rows, backends; len(a) < 3 || a[0].Host != c[2].Addr().String() {
		t.Errorf("rows not by traffic, the busiest first: %v", hostsOf(v.Rows))
	}

	// The two quieter backends as others: their times are read from their
	// histograms together, so they lie between the two rows' own (the
	// bounds loose: the views are a scrape apart at most).
	top1 := fleet.NewService(client, fleet.Config{Ranges: []string{"10s"}, CacheFor: time.Nanosecond, TopRows: 1})
	ov, err := top1.View(context.Background(), fleet.Request{Range: "10s"})
	if err != nil {
		t.Fatal(err)
	}
	o := ov.Others
	if o == nil || o.Rows != 2 || o.TTFT.P50 == nil || o.TPOT.P95 == nil || o.E2E.P99 == nil {
		t.Fatalf("others %+v", o)
	}
	lo, hi := math.Min(*v.Rows[1].TTFT.P50, *v.Rows[2].TTFT.P50), math.Max(*v.Rows[1].TTFT.P50, *v.Rows[2].TTFT.P50)
	t.Logf("others: TTFT p50 %.4f s (the two rows: %.4f, %.4f)", *o.TTFT.P50, *v.Rows[1].TTFT.P50, *v.Rows[2].TTFT.P50)
	if p := *o.TTFT.P50; p < lo/2 || p > hi*2 {
		t.Errorf("others' TTFT p50 %.4f s, not near the two rows' %.4f..%.4f s", p, lo, hi)
	}

	// One backend stops: it stays listed, not reporting.
	gone := backends[0]
	gone.Close(context.Background())
	deadline := time.Now().Add(time.Minute)
	for {
		v, err = svc.View(context.Background(), fleet.Request{Range: "10s"})
		if err != nil {
			t.Fatal(err)
		}
		reporting := map[string]bool{}
		for _, h := range v.Hosts {
			reporting[h.Host] = h.Reporting
		}
		if r, listed := reporting[gone.Addr().String()]; listed && !r && len(v.Hosts) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a stopped backend is not shown as not reporting: %+v", v.Hosts)
		}
		time.Sleep(200 * time.Millisecond) // polls Prometheus, which scrapes on its own clock
	}
}

func hostsOf(rows []fleetview.Row) string {
	var hs []string
	for _, r := range rows {
		hs = append(hs, fmt.Sprintf("%s %v", r.Host, *r.TokensPerSecond))
	}
	return strings.Join(hs, ", ")
}
