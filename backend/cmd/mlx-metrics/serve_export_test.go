package main

import (
	"context"
	"encoding/json"
	"flag"
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
)

// TestExportWiring runs the export side as serve wires it: a request
// through --proxy-to (to the reference engine) lands on the bus and shows
// in GET /api/metrics/prometheus.
func TestExportWiring(t *testing.T) {
	cfg := engine.DefaultConfig()
	cfg.DecodeRate, cfg.PrefillRate, cfg.LoadTime = 2000, 200000, 0
	eng, err := engine.New(cfg, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go eng.Run(ctx)
	engSrv := httptest.NewServer(eng.Handler())
	defer engSrv.Close()

	b := bus.New()
	side, err := startExport(ctx, &exportConfig{proxyTo: engSrv.URL + "/v1", scrapeInterval: time.Second}, b, health.New(time.Now(), health.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer side.Close(context.Background())
	app := server.New(server.Options{}, side.Features()...)
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

func TestExportFlags(t *testing.T) {
	tests := []struct {
		env      map[string]string
		args     []string
		targets  int
		interval time.Duration
		wantErr  bool
	}{
		{nil, []string{"--scrape", "http://127.0.0.1:8000,vllm", "--scrape", "http://127.0.0.1:8080,llamacpp,tiny"}, 2, 2 * time.Second, false},
		{nil, []string{"--scrape", "http://127.0.0.1:8000,tgi"}, 0, 0, true},
		{nil, []string{"--proxy-to", "http://127.0.0.1:8000"}, 0, 2 * time.Second, false},
		{map[string]string{"MLX_METRICS_SCRAPE": "http://127.0.0.1:8000,vllm http://127.0.0.1:8080,llamacpp", "MLX_METRICS_SCRAPE_INTERVAL": "5s"}, nil, 2, 5 * time.Second, false},
		{map[string]string{"MLX_METRICS_SCRAPE_INTERVAL": "5s"}, []string{"--scrape-interval=1s"}, 0, time.Second, false},
		// Refused, not skipped:
		{map[string]string{"MLX_METRICS_SCRAPE": "http://127.0.0.1:8000,vllm http://127.0.0.1:8080,tgi"}, nil, 1, 0, true},
		{map[string]string{"MLX_METRICS_SCRAPE_INTERVAL": "often"}, nil, 0, 0, true},
	}
	for _, tc := range tests {
		for _, k := range []string{"MLX_METRICS_SCRAPE", "MLX_METRICS_SCRAPE_INTERVAL"} {
			t.Setenv(k, tc.env[k])
		}
		fs := newFlagSetForTest()
		var env envDefaults
		cfg := addExportFlags(fs, &env)
		err := fs.Parse(tc.args)
		if err == nil {
			err = env.err()
		}
		if (err != nil) != tc.wantErr {
			t.Errorf("%v %q: err = %v", tc.env, tc.args, err)
			continue
		}
		if len(cfg.scrapes) != tc.targets {
			t.Errorf("%v %q: %d targets, want %d", tc.env, tc.args, len(cfg.scrapes), tc.targets)
		}
		if !tc.wantErr && cfg.scrapeInterval != tc.interval {
			t.Errorf("%v %q: interval %v, want %v", tc.env, tc.args, cfg.scrapeInterval, tc.interval)
		}
	}
}

func TestOTLPFlags(t *testing.T) {
	keys := []string{"MLX_METRICS_OTLP_ENDPOINT", "MLX_METRICS_OTLP_PROTOCOL", "MLX_METRICS_OTLP_INTERVAL"}
	tests := []struct {
		env  map[string]string
		args []string
		want otlp.Options
		// wantErr: refused at parsing (a malformed env twin) or at start
		// (checked by otlp.Options.Check).
		wantErr bool
	}{
		{nil, nil, otlp.Options{Protocol: otlp.ProtocolHTTP, Interval: otlp.DefaultInterval}, false},
		{nil, []string{"--otlp-endpoint", "http://127.0.0.1:4317", "--otlp-protocol", "grpc", "--otlp-interval", "30s"},
			otlp.Options{Endpoint: "http://127.0.0.1:4317", Protocol: otlp.ProtocolGRPC, Interval: 30 * time.Second}, false},
		{map[string]string{"MLX_METRICS_OTLP_ENDPOINT": "http://c:4318", "MLX_METRICS_OTLP_PROTOCOL": "http/protobuf", "MLX_METRICS_OTLP_INTERVAL": "1m"}, nil,
			otlp.Options{Endpoint: "http://c:4318", Protocol: otlp.ProtocolHTTP, Interval: time.Minute}, false},
		{map[string]string{"MLX_METRICS_OTLP_INTERVAL": "1m"}, []string{"--otlp-interval=5s"},
			otlp.Options{Protocol: otlp.ProtocolHTTP, Interval: 5 * time.Second}, false},
		// Refused:
		{map[string]string{"MLX_METRICS_OTLP_INTERVAL": "soon"}, nil, otlp.Options{}, true},
		{nil, []string{"--otlp-endpoint", "http://c:4318", "--otlp-protocol", "thrift"}, otlp.Options{}, true},
		{nil, []string{"--otlp-endpoint", "c:4318"}, otlp.Options{}, true},
		{nil, []string{"--otlp-endpoint", "http://c:4318", "--otlp-interval", "1ms"}, otlp.Options{}, true},
	}
	for _, tc := range tests {
		for _, k := range keys {
			t.Setenv(k, tc.env[k])
		}
		fs := newFlagSetForTest()
		var env envDefaults
		cfg := addExportFlags(fs, &env)
		err := fs.Parse(tc.args)
		if err == nil {
			err = env.err()
		}
		if err == nil && cfg.otlp.Endpoint != "" {
			_, err = cfg.otlp.Check()
		}
		if (err != nil) != tc.wantErr {
			t.Errorf("%v %q: err = %v", tc.env, tc.args, err)
			continue
		}
		if !tc.wantErr && (cfg.otlp.Endpoint != tc.want.Endpoint || cfg.otlp.Protocol != tc.want.Protocol || cfg.otlp.Interval != tc.want.Interval) {
			t.Errorf("%v %q: %+v, want %+v", tc.env, tc.args, cfg.otlp, tc.want)
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
	side, err := startExport(ctx, &exportConfig{scrapes: targets, scrapeInterval: time.Hour,
		otlp: otlp.Options{Endpoint: receiver.URL, Protocol: otlp.ProtocolHTTP, Interval: otlp.MaxInterval}}, bus.New(), healthz)
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

func newFlagSetForTest() *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}
