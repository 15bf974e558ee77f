package loadgen

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/gpu/engine"
	"github.com/mlx-bun/mlx-metrics/gpu/engine/enginetest"
)

// firstWrite records, per response id, when the server handler was entered
// and when its first chunk (the first token, for completions) was written
// and flushed: the TTFT as the server's HTTP layer sees it.
type firstWrite struct {
	mu    sync.Mutex
	ttft  map[string]time.Duration
	idRef *regexp.Regexp
}

type stampWriter struct {
	http.ResponseWriter
	fw      *firstWrite
	entered time.Time
	done    bool
}

func (w *stampWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	if !w.done {
		w.done = true
		w.ResponseWriter.(http.Flusher).Flush()
		if m := w.fw.idRef.FindSubmatch(b); m != nil {
			d := time.Since(w.entered)
			w.fw.mu.Lock()
			w.fw.ttft[string(m[1])] = d
			w.fw.mu.Unlock()
		}
	}
	return n, err
}

func (w *stampWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

// BenchmarkOverhead256 measures the load generator's own error with 256
// concurrent streams against a loopback reference engine. Streams start on
// a ramp (one every 3 ms) and each lasts longer than the ramp, so the
// later ones measure their TTFT while up to 255 others are streaming. The
// added TTFT error of a stream is the client's TTFT minus the server
// handler's (entry to the first token written and flushed): the client's
// request writing, the loopback, and the client's chunk parsing.
//
//	go test -run '^$' -bench Overhead256 -benchtime 3x ./gpu/loadgen/
func BenchmarkOverhead256(b *testing.B) { benchOverhead(b, 256) }

// BenchmarkOverhead1 is the same path with one stream at a time: the floor.
func BenchmarkOverhead1(b *testing.B) { benchOverhead(b, 1) }

func benchOverhead(b *testing.B, streams int) {
	const ramp = 3 * time.Millisecond
	cfg := engine.DefaultConfig()
	cfg.LoadTime = 0
	cfg.BatchCapacity = streams
	cfg.PrefillRate, cfg.DecodeRate, cfg.BatchSlowdown = 1e6, 25, 0
	e := enginetest.Run(b, cfg, engine.Options{})
	fw := &firstWrite{ttft: map[string]time.Duration{}, idRef: regexp.MustCompile(`"id":"([^"]+)"`)}
	h := e.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&stampWriter{ResponseWriter: w, fw: fw, entered: time.Now()}, r)
	}))
	defer srv.Close()
	c := New(srv.URL+"/v1", Options{})
	defer c.Close()
	prompt := Prompt(100, "")
	// Each stream: 40 tokens at 25 tok/s (a per-stream rate typical of a
	// full batch), 1.6 s, longer than the 0.77 s ramp: all 256 overlap.
	maxTokens := 40

	var added []float64
	// Round 0 opens the connections and is not counted: a load generator
	// keeps its connections, and connection setup is not TTFT error.
	b.ResetTimer()
	for round := range b.N + 1 {
		results := make([]Result, streams)
		errs := make([]error, streams)
		var wg sync.WaitGroup
		tick := time.NewTicker(ramp)
		for i := range streams {
			<-tick.C
			wg.Go(func() {
				results[i], errs[i] = c.Do(context.Background(), Request{
					Endpoint: Completions, Model: cfg.Model, Prompt: prompt, MaxTokens: maxTokens, Timeout: time.Minute,
				})
			})
		}
		tick.Stop()
		wg.Wait()
		b.StopTimer()
		if round == 0 {
			b.ResetTimer() // nor is it in ns/op
			b.StartTimer()
			continue
		}
		for i, r := range results {
			if errs[i] != nil {
				b.Fatal(errs[i])
			}
			fw.mu.Lock()
			server, ok := fw.ttft[r.ID]
			fw.mu.Unlock()
			if !ok {
				b.Fatalf("no server timing for %s", r.ID)
			}
			added = append(added, float64(r.TTFT()-server)/float64(time.Millisecond))
		}
		b.StartTimer()
	}
	sort.Float64s(added)
	pct := func(p float64) float64 { return added[int(p*float64(len(added)-1))] }
	b.ReportMetric(pct(0.5), "added-ttft-p50-ms")
	b.ReportMetric(pct(0.99), "added-ttft-p99-ms")
	if testing.Verbose() {
		fmt.Printf("added TTFT over %d streams: p50 %.3f ms, p99 %.3f ms, max %.3f ms\n", len(added), pct(0.5), pct(0.99), added[len(added)-1])
	}
}
