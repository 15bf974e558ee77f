package main

import (
	"context"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/gpu/engine"
)

// TestExportWiring runs the export side as serve wires it: a request
// through --proxy-to (to the reference engine) lands on the bus and shows
// in GET /api/metrics/prometheus.
func TestExportWiring(t *testing.T) {
	cfg := engine.DefaultConfig()
	cfg.DecodeRate, cfg.PrefillRate, cfg.LoadTime = 2000, 200000, 0
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go eng.Run(ctx)
	engSrv := httptest.NewServer(eng.Handler())
	defer engSrv.Close()

	b := bus.New()
	side, err := startExport(ctx, &exportConfig{proxyTo: engSrv.URL + "/v1", scrapeInterval: time.Second}, b)
	if err != nil {
		t.Fatal(err)
	}
	defer side.stop()
	app := server.New(server.Options{}, side.features...)
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

func newFlagSetForTest() *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}
