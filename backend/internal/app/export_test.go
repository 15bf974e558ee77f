package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/backend/internal/health"
	"github.com/mlx-bun/mlx-metrics/backend/internal/otlp"
	"github.com/mlx-bun/mlx-metrics/backend/internal/scrape"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/gpu/engine"
	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// TestExportWiring runs the export side as Start wires it: a request
// through --proxy-to (to the reference engine) lands on the bus and shows
// in GET /api/metrics/prometheus.
func TestExportWiring(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	engSrv := startEngine(ctx, t, engine.Options{})

	b := bus.New()
	side, err := StartExport(ctx, b, health.New(time.Now(), health.Options{}), ExportConfig{ProxyTo: engSrv.URL + "/v1", ScrapeInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer side.Close(context.Background())
	var h Handlers
	side.Handlers(&h)
	app := server.New(server.Options{}, Routes(h)...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go app.Listener(ln)
	defer app.Shutdown()
	base := "http://" + ln.Addr().String()

	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(
		`{"model":"reference-sim","stream":true,"max_tokens":12,"messages":[{"role":"user","content":"hello there"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	// The proxy publishes before it ends the chunked body, so the client
	// having read to EOF means the event is on the bus; Flush waits until
	// the exporter has it.
	b.Flush()
	r, err := http.Get(base + "/api/metrics/prometheus")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	text := string(body)
	for _, want := range []string{
		`mlx_generation_tokens_total{model_name="reference-sim"} 12`,
		`mlx_request_success_total{finished_reason="length",model_name="reference-sim"} 1`,
		`mlx_time_to_first_token_seconds_count{model_name="reference-sim"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("exporter lacks %q:\n%s", want, text)
		}
	}
}

// The export side adds its /healthz sections, and with --otlp-endpoint
// pushes a last time when it stops.
func TestExportHealthAndOTLP(t *testing.T) {
	var pushes atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/metrics" {
			pushes.Add(1)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer receiver.Close()
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 1\n")
	}))
	defer engine.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var targets scrape.Targets
	targets.Set(engine.URL + "/metrics,vllm")
	healthz := health.New(time.Now(), health.Options{})
	side, err := StartExport(ctx, bus.New(), healthz, ExportConfig{Scrapes: targets, ScrapeInterval: time.Hour,
		OTLP: otlp.Options{Endpoint: receiver.URL, Protocol: otlp.ProtocolHTTP, Interval: otlp.MaxInterval}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(healthz.Report())
	var report struct {
		OTLP   *otlp.Stats       `json:"otlp"`
		Scrape []json.RawMessage `json:"scrape"`
	}
	json.Unmarshal(b, &report)
	if report.OTLP == nil || report.OTLP.Endpoint != receiver.URL+"/v1/metrics" || len(report.Scrape) != 1 {
		t.Errorf("healthz lacks the otlp or scrape section: %s", b)
	}
	if err := side.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if pushes.Load() != 1 {
		t.Errorf("%d pushes at stop, want the last one", pushes.Load())
	}
}

// A refused export value is refused before anything starts, by the flag
// that set it.
func TestExportCheckNamesTheFlag(t *testing.T) {
	ok := ExportConfig{ScrapeInterval: time.Second}
	tests := []struct {
		name string
		edit func(*ExportConfig)
		want string // the error's start; "" for none
	}{
		{"defaults", func(*ExportConfig) {}, ""},
		{"every value set", func(c *ExportConfig) {
			c.ProxyTo = "http://127.0.0.1:8000/v1"
			c.OTLP = otlp.Options{Endpoint: "http://127.0.0.1:4318", Protocol: otlp.ProtocolGRPC, Interval: time.Minute}
		}, ""},
		{"scrape interval", func(c *ExportConfig) { c.ScrapeInterval = time.Millisecond }, "--scrape-interval "},
		{"proxy scheme", func(c *ExportConfig) { c.ProxyTo = "ftp://host" }, `--proxy-to "ftp://host": want an http(s) URL`},
		{"proxy query", func(c *ExportConfig) { c.ProxyTo = "http://host/?a=1" }, "--proxy-to "},
		{"proxy timeouts", func(c *ExportConfig) { c.ProxyHeadTimeout, c.ProxyIdleTimeout = time.Second, 24*time.Hour }, ""},
		{"proxy head timeout under 1s", func(c *ExportConfig) { c.ProxyHeadTimeout = time.Millisecond }, "--proxy-head-timeout 1ms: want from 1s to 24h"},
		{"proxy idle timeout over 24h", func(c *ExportConfig) { c.ProxyIdleTimeout = 25 * time.Hour }, "--proxy-idle-timeout 25h0m0s: want"},
		{"proxy timeout negative", func(c *ExportConfig) { c.ProxyIdleTimeout = -time.Second }, "--proxy-idle-timeout -1s: want"},
		{"otlp endpoint", func(c *ExportConfig) { c.OTLP.Endpoint = "host:4318" }, "--otlp-endpoint: want"},
		{"otlp interval", func(c *ExportConfig) {
			c.OTLP = otlp.Options{Endpoint: "http://c:4318", Interval: time.Millisecond}
		}, "--otlp-interval: 1ms, want"},
		{"otlp protocol", func(c *ExportConfig) {
			c.OTLP = otlp.Options{Endpoint: "http://c:4318", Protocol: "thrift"}
		}, `--otlp-protocol: "thrift", want`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.edit(&c)
			err := c.check()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("check = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
				t.Fatalf("check = %v, want %q...", err, tt.want)
			}
		})
	}
}

// A proxy in front of a server that publishes its own events to the same
// backend (engine --publish, or a host) counts each request once: the
// second report, from the other source, is a duplicate in /healthz.
func TestProxyAndPublisherCountOnce(t *testing.T) {
	const n = 5
	var backend string
	posted := make(chan []byte, 1024)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// As engine --publish does: each event the engine makes is POSTed.
	engSrv := startEngine(ctx, t, engine.Options{Sink: func(ev events.Event) {
		if b, err := json.Marshal(ev); err == nil {
			posted <- b
		}
	}})

	c := startConfig(t)
	c.Export.ProxyTo = engSrv.URL + "/v1"
	b, err := Start(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	backend = "http://" + b.Addr().String()
	publisherDone := make(chan struct{})
	go func() {
		defer close(publisherDone)
		for {
			select {
			case line := <-posted:
				if res, err := http.Post(backend+"/api/metrics/events", "application/x-ndjson", bytes.NewReader(line)); err == nil {
					res.Body.Close()
				}
			case <-ctx.Done():
				return
			}
		}
	}()

	for i := range n {
		res, err := http.Post(backend+"/v1/chat/completions", "application/json", strings.NewReader(fmt.Sprintf(
			`{"model":"reference-sim","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"hello %d"}]}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	type counts struct{ Accepted, Duplicates uint64 }
	var health struct {
		Ingest struct{ HTTP counts } `json:"ingest"`
		Proxy  struct{ Events counts }
	}
	deadline := time.Now().Add(time.Minute) // a safeguard against a hang
	for {
		res, err := http.Get(backend + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(res.Body).Decode(&health)
		res.Body.Close()
		dups := health.Ingest.HTTP.Duplicates + health.Proxy.Events.Duplicates
		if dups >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d requests: %+v, want %d duplicates", n, health, n)
		}
		time.Sleep(20 * time.Millisecond) // polls /healthz; not synchronisation
	}
	// Every request's second copy was refused, so each was accepted once;
	// the accepted copies reach the snapshot through the bus, a moment
	// later under load: wait for them, then none may be counted twice.
	var snap struct{ Requests struct{ Finished int } }
	for {
		res, err := http.Get(backend + "/api/metrics/snapshot")
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(res.Body).Decode(&snap)
		res.Body.Close()
		if snap.Requests.Finished >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // polls the snapshot; not synchronisation
	}
	if snap.Requests.Finished != n {
		t.Fatalf("%d requests finished, want %d (each counted once): %+v", snap.Requests.Finished, n, health)
	}
}

// startEngine runs a fast reference engine (2000 tok/s decode, no load
// time) until ctx ends, served on a loopback test server.
func startEngine(ctx context.Context, t *testing.T, o engine.Options) *httptest.Server {
	t.Helper()
	cfg := engine.DefaultConfig()
	cfg.DecodeRate, cfg.PrefillRate, cfg.LoadTime = 2000, 200000, 0
	eng, err := engine.New(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	go eng.Run(ctx)
	srv := httptest.NewServer(eng.Handler())
	t.Cleanup(srv.Close)
	return srv
}
