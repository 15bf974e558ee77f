package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/gpu/engine"
	"github.com/mlx-bun/mlx-metrics/gpu/loadgen"
)

// referenceEngineConfig is serve's --reference-engine: the reference engine
// in-process with light synthetic traffic, publishing to this backend, so a
// fresh machine shows a live panel.
type referenceEngineConfig struct {
	enabled bool
	rate    float64
	// engine replaces the default engine configuration (tests).
	engine *engine.Config
}

func addReferenceEngineFlags(fs *flag.FlagSet, env *envDefaults) *referenceEngineConfig {
	c := &referenceEngineConfig{}
	fs.BoolVar(&c.enabled, "reference-engine", env.bool("MLX_METRICS_REFERENCE_ENGINE", false), "run the reference engine (a simulator) on a loopback port with synthetic traffic, publishing its events here (env MLX_METRICS_REFERENCE_ENGINE)")
	fs.Float64Var(&c.rate, "reference-traffic", env.float("MLX_METRICS_REFERENCE_TRAFFIC", 1), "the mean `RATE` of synthetic requests per second sent to the reference engine (env MLX_METRICS_REFERENCE_TRAFFIC)")
	return c
}

// loopbackURL is how this process reaches its own listen address.
func loopbackURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// referenceEngine is --reference-engine running, a part of serve: the
// engine and its traffic.
type referenceEngine struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startReferenceEngine starts the engine once the backend answers, then
// the traffic. Disabled, it starts nothing and its Close does nothing.
func startReferenceEngine(ctx context.Context, c *referenceEngineConfig, backendAddr, eventsToken string) (*referenceEngine, error) {
	if !c.enabled {
		return &referenceEngine{cancel: func() {}}, nil
	}
	if c.rate <= 0 {
		return nil, fmt.Errorf("-reference-traffic %v: must be > 0 requests per second", c.rate)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("reference engine: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &referenceEngine{cancel: cancel}
	backend := loopbackURL(backendAddr)
	r.wg.Go(func() {
		if !waitForBackend(ctx, backend+"/healthz") {
			ln.Close()
			return
		}
		cfg := engine.DefaultConfig()
		if c.engine != nil {
			cfg = *c.engine
		}
		base := "http://" + ln.Addr().String() + "/v1"
		fmt.Fprintf(os.Stderr, "mlx-metrics: reference engine (a simulator) serving %q at %s with ~%g synthetic requests/s\n", cfg.Model, base, c.rate)
		r.wg.Go(func() {
			client := loadgen.New(base, loadgen.Options{})
			defer client.Close()
			client.Traffic(ctx, loadgen.TrafficOptions{Model: cfg.Model, RatePerSecond: c.rate, Seed: uint64(time.Now().UnixNano())}, nil)
		})
		if err := engine.Serve(ctx, cfg, ln, engine.ServeOptions{PublishURL: backend, PublishToken: eventsToken, Log: os.Stderr}); err != nil {
			fmt.Fprintf(os.Stderr, "mlx-metrics: reference engine: %v\n", err)
		}
	})
	return r, nil
}

// Features is none: the engine serves on its own loopback port.
func (r *referenceEngine) Features() []server.Feature { return nil }

// Close stops the engine and the traffic and waits, within ctx, for both
// to end.
func (r *referenceEngine) Close(ctx context.Context) error {
	r.cancel()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("reference engine: %w", ctx.Err())
	}
}

// waitForBackend polls url until it answers, so the engine's first events
// (its model load) are not lost to a backend still starting.
func waitForBackend(ctx context.Context, url string) bool {
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}
