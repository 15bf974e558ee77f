package proxy

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// BenchmarkProxyTTFT64 measures what the proxy adds to time to first token
// with 64 streams in flight on loopback. A fake upstream answers like an
// engine under load (prefill, then tokens at a steady rate); 64 clients
// each run b.N streams back to back, first straight to the upstream, then
// through the proxy, and the figures are each side's TTFT percentiles and
// the difference of the p50s.
//
//	go test -run '^$' -bench ProxyTTFT64 -benchtime 20x ./backend/internal/proxy/
func BenchmarkProxyTTFT64(b *testing.B) {
	const (
		streams  = 64
		tokens   = 16
		prefill  = 10 * time.Millisecond
		interval = 2 * time.Millisecond
	)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		f := w.(http.Flusher)
		f.Flush()
		time.Sleep(prefill) // the simulated engine's work, not synchronisation
		for i := 0; i < tokens; i++ {
			io.WriteString(w, `data: {"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"tok"},"finish_reason":null}]}`+"\n\n")
			f.Flush()
			time.Sleep(interval)
		}
		io.WriteString(w, `data: {"id":"c","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n"+
			`data: {"id":"c","model":"m","choices":[],"usage":{"prompt_tokens":8,"completion_tokens":16,"total_tokens":24}}`+"\n\ndata: [DONE]\n\n")
	}))
	defer upstream.Close()

	var published sync.WaitGroup
	p, err := New(upstream.URL, func(events.Event) { published.Done() })
	if err != nil {
		b.Fatal(err)
	}
	proxyURL, _ := serve(b, p)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * streams, DisableCompression: true}}

	// ttft runs one stream to the end and returns the time until its first
	// data line.
	ttft := func(url string) time.Duration {
		t0 := time.Now()
		resp, err := client.Post(url+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			b.Error(err)
			return 0
		}
		defer resp.Body.Close()
		rd := bufio.NewReader(resp.Body)
		line, err := rd.ReadString('\n')
		d := time.Since(t0)
		if err != nil || !strings.HasPrefix(line, "data: ") {
			b.Errorf("first line %q: %v", line, err)
		}
		io.Copy(io.Discard, rd)
		return d
	}
	// phase runs streams clients, n streams each, and returns every TTFT.
	phase := func(url string, n int) []time.Duration {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var out []time.Duration
		for i := 0; i < streams; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < n; j++ {
					d := ttft(url)
					mu.Lock()
					out = append(out, d)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return out
	}

	published.Add(streams)
	phase(upstream.URL, 1) // warm both connection pools
	phase(proxyURL, 1)
	published.Wait()
	b.ResetTimer()
	direct := phase(upstream.URL, b.N)
	published.Add(streams * b.N)
	proxied := phase(proxyURL, b.N)
	published.Wait() // every stream was measured and published
	b.StopTimer()
	b.ReportMetric(ms(pct(direct, 50)), "direct-p50-ms")
	b.ReportMetric(ms(pct(proxied, 50)), "proxied-p50-ms")
	b.ReportMetric(ms(pct(direct, 99)), "direct-p99-ms")
	b.ReportMetric(ms(pct(proxied, 99)), "proxied-p99-ms")
	b.ReportMetric(ms(pct(proxied, 50)-pct(direct, 50)), "added-p50-ms")
}

// pct is the nearest-rank percentile q of ds.
func pct(ds []time.Duration, q int) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[(len(ds)-1)*q/100]
}
