package load

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"runtime"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/gpu/engine"
	"github.com/mlx-bun/mlx-metrics/gpu/engine/enginetest"
	"github.com/mlx-bun/mlx-metrics/gpu/loadgen"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// The client is not the bottleneck (scripts/bench-load, docs/performance.md):
// a point at 1,000 requests/s open loop, and one of 512 streams closed
// loop, against a loopback reference engine that is never full (1,024
// rows, fast steps). Each reports the schedule lag p50 and p99, the
// client's share of TTFT p50 and p99 (kernel arrival stamps less the
// engine's own received-to-first-token time), and the heap per request
// in flight at the peak.
//
//	go test -run '^$' -bench 'Client' -benchtime 3x ./gpu/load/
func BenchmarkClientOpenLoop1000(b *testing.B) {
	benchClient(b, point{rate: 1000}, bench.Load{Arrival: bench.ArrivalPoisson, Requests: 5000, WarmupRequests: 200}, inProcess(b))
}

func BenchmarkClientClosedLoop512(b *testing.B) {
	benchClient(b, point{streams: 512}, bench.Load{Requests: 5000, WarmupRequests: 512}, inProcess(b))
}

// BenchmarkClientOpenLoop1000Apart and BenchmarkClientClosedLoop512Apart
// are the same points with the engine in a process of its own, as a real
// server runs, pinned to the CPUs ENGINE_CPUS names when set
// (scripts/bench-load --apart runs the benchmark on the others).
func BenchmarkClientOpenLoop1000Apart(b *testing.B) {
	benchClient(b, point{rate: 1000}, bench.Load{Arrival: bench.ArrivalPoisson, Requests: 5000, WarmupRequests: 200}, apart(b))
}

func BenchmarkClientClosedLoop512Apart(b *testing.B) {
	benchClient(b, point{streams: 512}, bench.Load{Requests: 5000, WarmupRequests: 512}, apart(b))
}

// The engine never full: 1,024 rows, fast steps, no load time.
func engineConfig() engine.Config {
	cfg := engine.DefaultConfig()
	cfg.LoadTime, cfg.DecodeRate, cfg.PrefillRate, cfg.BatchCapacity, cfg.BatchSlowdown = 0, 200, 1e6, 1024, 0
	return cfg
}

// inProcess serves the engine in the benchmark's process and returns its
// base URL.
func inProcess(b *testing.B) string {
	srv := httptest.NewServer(enginetest.Run(b, engineConfig(), engine.Options{}).Handler())
	b.Cleanup(srv.Close)
	return srv.URL
}

// apart runs the engine as a process of its own, with engineConfig's
// values, and returns its base URL.
func apart(b *testing.B) string {
	cfg := engineConfig()
	return enginetest.Spawn(b, os.Getenv("ENGINE_CPUS"), "--load-ms", "0", "--decode-rate", fmt.Sprint(cfg.DecodeRate),
		"--prefill-rate", fmt.Sprint(cfg.PrefillRate), "--batch-capacity", fmt.Sprint(cfg.BatchCapacity), "--batch-slowdown", "0")
}

func benchClient(b *testing.B, p point, l bench.Load, base string) {
	l.Workload = bench.Workload{Kind: bench.WorkloadRandom, Input: bench.Lengths{Tokens: 32}, Output: bench.Lengths{Tokens: 16}}
	l = l.Defaults()
	wl, _ := newWorkload(l.Workload, 1)
	c := loadgen.New(base+"/v1", loadgen.Options{})
	defer c.Close()
	s := &sender{client: c, model: "reference-sim", load: l, wl: wl, nonce: "bench", timeout: func(int, int) time.Duration { return time.Minute }}
	for i := range b.N {
		p.index, p.repeat = 1, i+1
		var buf bytes.Buffer
		var peakHeap atomic.Uint64
		done := make(chan struct{})
		go func() { // the heap at its largest, sampled every 10 ms
			var ms runtime.MemStats
			for {
				select {
				case <-done:
					return
				case <-time.After(10 * time.Millisecond):
				}
				runtime.ReadMemStats(&ms)
				if ms.HeapAlloc > peakHeap.Load() {
					peakHeap.Store(ms.HeapAlloc)
				}
			}
		}()
		lp, err := s.run(context.Background(), p, &buf)
		close(done)
		if err != nil {
			b.Fatal(err)
		}
		var share []float64
		inFlight := 0
		for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
			var r bench.RequestRecord
			if json.Unmarshal(line, &r) == nil && !r.Warmup && r.ClientMs > 0 {
				share = append(share, r.ClientMs)
			}
		}
		sort.Float64s(share)
		if p.closed() {
			inFlight = p.streams
		} else {
			inFlight = max(1, int(lp.RequestThroughput*lp.E2EL.Mean/1000)) // Little's law
		}
		b.ReportMetric(lp.Lag.Median, "lag-p50-ms")
		b.ReportMetric(lp.Lag.P99, "lag-p99-ms")
		b.ReportMetric(bench.Percentile(share, 50), "client-p50-ms")
		b.ReportMetric(bench.Percentile(share, 99), "client-p99-ms")
		b.ReportMetric(lp.RequestThroughput, "req/s")
		b.ReportMetric(float64(peakHeap.Load())/float64(inFlight)/1024, "heap-KiB/in-flight")
		b.Logf("%s: %d ok of %d, %.0f req/s, lag p50 %.3f p99 %.3f ms, client share p50 %.3f p99 %.3f ms (%d stamped), ~%d in flight, peak heap %.1f MiB, problems %q",
			describeLoad(p), lp.Completed, lp.Requests, lp.RequestThroughput, lp.Lag.Median, lp.Lag.P99,
			bench.Percentile(share, 50), bench.Percentile(share, 99), len(share), inFlight, float64(peakHeap.Load())/(1<<20), lp.Problems)
	}
}

func describeLoad(p point) string {
	if p.closed() {
		return "closed loop"
	}
	return "open loop"
}
