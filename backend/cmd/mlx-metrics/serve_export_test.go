package main

import (
	"flag"
	"io"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/app"
	"github.com/mlx-bun/mlx-metrics/backend/internal/otlp"
)

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
		var cfg app.ExportConfig
		addExportFlags(fs, &env, &cfg)
		err := fs.Parse(tc.args)
		if err == nil {
			err = env.err()
		}
		if (err != nil) != tc.wantErr {
			t.Errorf("%v %q: err = %v", tc.env, tc.args, err)
			continue
		}
		if len(cfg.Scrapes) != tc.targets {
			t.Errorf("%v %q: %d targets, want %d", tc.env, tc.args, len(cfg.Scrapes), tc.targets)
		}
		if !tc.wantErr && cfg.ScrapeInterval != tc.interval {
			t.Errorf("%v %q: interval %v, want %v", tc.env, tc.args, cfg.ScrapeInterval, tc.interval)
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
		var cfg app.ExportConfig
		addExportFlags(fs, &env, &cfg)
		err := fs.Parse(tc.args)
		if err == nil {
			err = env.err()
		}
		if err == nil && cfg.OTLP.Endpoint != "" {
			_, err = cfg.OTLP.Check()
		}
		if (err != nil) != tc.wantErr {
			t.Errorf("%v %q: err = %v", tc.env, tc.args, err)
			continue
		}
		if !tc.wantErr && (cfg.OTLP.Endpoint != tc.want.Endpoint || cfg.OTLP.Protocol != tc.want.Protocol || cfg.OTLP.Interval != tc.want.Interval) {
			t.Errorf("%v %q: %+v, want %+v", tc.env, tc.args, cfg.OTLP, tc.want)
		}
	}
}

func newFlagSetForTest() *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}
