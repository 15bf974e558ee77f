package proxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mlx-bun/mlx-metrics/shared/clock"
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
	p, err := New(upstream.URL, func(events.Event) { published.Done() }, Options{})
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

// tokenEvent is one token chunk as vLLM streams it.
const tokenEvent = `data: {"id":"cmpl-1","object":"text_completion","created":1764690000,"model":"m","choices":[{"index":0,"text":" tok","logprobs":null,"finish_reason":null}]}` + "\n\n"

// repeatReader returns one event per Read, forever.
type repeatReader struct{ event string }

func (r repeatReader) Read(p []byte) (int, error) { return copy(p, r.event), nil }
func (repeatReader) Close() error                 { return nil }

// BenchmarkRelayRead is the proxy's own CPU per event of a metered stream
// past its first token: one Read as fasthttp makes it (the boundary cut,
// the copy for the meter and the meter), without the sockets. It must not
// allocate.
//
//	go test -run '^$' -bench RelayRead -benchmem ./backend/internal/proxy/
func BenchmarkRelayRead(b *testing.B) {
	p, _ := New("http://127.0.0.1:1", func(events.Event) {}, Options{})
	m := newMeter(time.Now(), []byte(`{"model":"m","stream":true}`))
	m.sse = true
	r := &relay{p: p, ctx: context.Background(), cancel: func() {}, body: repeatReader{tokenEvent}, status: 200, m: m, sse: true}
	buf := make([]byte, 4096)
	r.Read(buf)
	if n, _ := r.Read(buf); n != len(tokenEvent) || m.firstToken.IsZero() {
		b.Fatalf("read %d bytes, first token %v", n, m.firstToken)
	}
	b.SetBytes(int64(len(tokenEvent)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if n, _ := r.Read(buf); n != len(tokenEvent) {
			b.Fatalf("read %d bytes", n)
		}
	}
}

// BenchmarkStreamChunk is the cost of one event of a stream on loopback,
// straight from the upstream and through the proxy. The upstream writes
// and flushes one event, then waits until the client has read it, as an
// engine does between tokens: every event makes each hop on its own, with
// no batching of several into one read. ns/op is the wall time of an event
// from the upstream's write to the client's read, and cpu-us/event the CPU
// of this process (upstream, proxy and client together) per event; the
// proxied figures less the direct ones are what relaying an event costs.
//
//	go test -run '^$' -bench StreamChunk ./backend/internal/proxy/
func BenchmarkStreamChunk(b *testing.B) {
	read := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for range n {
			io.WriteString(w, tokenEvent)
			f.Flush()
			<-read
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer upstream.Close()
	p, err := New(upstream.URL, func(events.Event) {}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	proxyURL, _ := serve(b, p)
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	for _, side := range []struct{ name, url string }{{"direct", upstream.URL}, {"proxied", proxyURL}} {
		b.Run(side.name, func(b *testing.B) {
			cpu0 := cpuTime()
			resp, err := client.Post(fmt.Sprintf("%s/v1/completions?n=%d", side.url, b.N), "application/json",
				strings.NewReader(`{"model":"m","stream":true}`))
			if err != nil {
				b.Fatal(err)
			}
			defer resp.Body.Close()
			rd := bufio.NewReader(resp.Body)
			got := 0
			for {
				line, err := rd.ReadSlice('\n')
				if bytes.HasPrefix(line, []byte("data: {")) {
					got++
					read <- struct{}{}
				}
				if err != nil {
					break
				}
			}
			if got != b.N {
				b.Fatalf("%d events of %d", got, b.N)
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-us/event")
		})
	}
}

// cpuTime is this process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// legUpstream is an upstream that notes when each request's body is in
// (on arrived) and answers a one-token stream: what the request-leg
// benchmarks time a request's way to.
func legUpstream(b *testing.B) (*httptest.Server, <-chan time.Time) {
	arrived := make(chan time.Time, 1)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		arrived <- time.Now()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, tokenEvent+"data: [DONE]\n\n")
	}))
	b.Cleanup(upstream.Close)
	return upstream, arrived
}

// BenchmarkRequestLeg is the time from a client sending a streamed chat
// request to the upstream's handler having it, straight and through the
// proxy, for a short and a long prompt: what the proxy does before it
// forwards a request (its p50, in µs) adds to time to first token.
//
//	go test -run '^$' -bench RequestLeg -benchtime 300x ./backend/internal/proxy/
func BenchmarkRequestLeg(b *testing.B) {
	upstream, arrived := legUpstream(b)
	p, err := New(upstream.URL, func(events.Event) {}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	proxyURL, _ := serve(b, p)
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	for _, kib := range []int{1, 64} {
		body := []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"` +
			strings.Repeat("word ", kib<<10/5) + `"}]}`)
		for _, side := range []struct{ name, url string }{{"direct", upstream.URL}, {"proxied", proxyURL}} {
			b.Run(fmt.Sprintf("%dKiB/%s", kib, side.name), func(b *testing.B) {
				legs := make([]time.Duration, 0, b.N)
				for b.Loop() {
					t0 := time.Now()
					resp, err := client.Post(side.url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					legs = append(legs, (<-arrived).Sub(t0))
				}
				b.ReportMetric(float64(pct(legs, 50))/float64(time.Microsecond), "p50-us")
			})
		}
	}
}

// BenchmarkUpstreamClient is the proxy's own request leg with two HTTP
// clients: the time from a request's send to the upstream's handler having
// it, through net/http's client (the proxy's, which hands the request to a
// writing goroutine and the answer back from a reading one) and through
// fasthttp's (which writes and reads in the caller's goroutine). Their
// p50s being alike says the handoffs are not what the proxy adds beside
// nginx.
//
//	go test -run '^$' -bench UpstreamClient -benchtime 2000x -count 4 ./backend/internal/proxy/
func BenchmarkUpstreamClient(b *testing.B) {
	upstream, arrived := legUpstream(b)
	url := upstream.URL + "/v1/chat/completions"
	body := []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hello"}]}`)
	b.Run("net-http", func(b *testing.B) {
		client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
		legs := make([]time.Duration, 0, b.N)
		for b.Loop() {
			t0 := time.Now()
			resp, err := client.Post(url, "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			legs = append(legs, (<-arrived).Sub(t0))
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		b.ReportMetric(float64(pct(legs, 50))/float64(time.Microsecond), "p50-us")
	})
	b.Run("fasthttp", func(b *testing.B) {
		client := &fasthttp.Client{StreamResponseBody: true}
		legs := make([]time.Duration, 0, b.N)
		for b.Loop() {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			req.SetRequestURI(url)
			req.Header.SetMethod(http.MethodPost)
			req.Header.SetContentType("application/json")
			req.SetBody(body)
			t0 := time.Now()
			if err := client.Do(req, resp); err != nil {
				b.Fatal(err)
			}
			legs = append(legs, (<-arrived).Sub(t0))
			io.Copy(io.Discard, resp.BodyStream())
			resp.CloseBodyStream()
			fasthttp.ReleaseRequest(req)
			fasthttp.ReleaseResponse(resp)
		}
		b.ReportMetric(float64(pct(legs, 50))/float64(time.Microsecond), "p50-us")
	})
}

// BenchmarkUpstreamRead is what reading the upstream costs the proxy per
// event beyond the read itself (in memory here): the idle timeout and the
// client's stall deadline, on a loopback TCP connection as the client's.
//
//	go test -run '^$' -bench UpstreamRead -benchmem ./backend/internal/proxy/
func BenchmarkUpstreamRead(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	if c := <-accepted; c != nil {
		defer c.Close()
	}
	u := &upstreamReader{body: repeatReader{tokenEvent}, clock: clock.Real{}, idle: DefaultIdleTimeout,
		stall: DefaultStallTimeout, cancel: func(error) {}, conn: conn}
	defer u.Close()
	buf := make([]byte, 4096)
	b.ReportAllocs()
	for b.Loop() {
		if n, _ := u.Read(buf); n != len(tokenEvent) {
			b.Fatalf("read %d bytes", n)
		}
	}
}
