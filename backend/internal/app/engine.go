package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/gpu/engine"
	"github.com/mlx-bun/mlx-metrics/gpu/loadgen"
	"github.com/mlx-bun/mlx-metrics/shared/logkey"
)

// ReferenceEngineConfig is serve's --reference-engine: the reference
// engine in-process with light synthetic traffic, publishing to this
// backend, so a fresh machine shows a live panel.
type ReferenceEngineConfig struct {
	Enabled bool    // --reference-engine
	Rate    float64 // --reference-traffic: requests per second, more than 0
	// Engine replaces the default engine configuration (tests).
	Engine *engine.Config
	// log is serve's (Start sets it; slog.Default() when nil).
	log *slog.Logger
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

// check refuses a traffic rate the load generator cannot keep.
func (c ReferenceEngineConfig) check() error {
	if !c.Enabled {
		return nil
	}
	// NaN passes a plain > 0 test, and a rate of Inf (or one far beyond
	// what 8 requests in flight can take) turns the arrival loop into a
	// busy loop that holds a core.
	if !(c.Rate > 0 && c.Rate <= MaxReferenceTraffic) {
		return configErrorf("-reference-traffic %v: must be more than 0 and at most %d requests per second", c.Rate, MaxReferenceTraffic)
	}
	return nil
}

// MaxReferenceTraffic bounds --reference-traffic, in requests per second:
// the engine's synthetic traffic is light (8 requests in flight at most,
// arrivals beyond them dropped).
const MaxReferenceTraffic = 1000

// ReferenceEngine is --reference-engine running, a part of serve: the
// engine and its traffic.
type ReferenceEngine struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// StartReferenceEngine starts the engine once the backend at backendAddr
// answers, then the traffic; the engine publishes its events there with
// eventsToken. Disabled, it starts nothing and its Close does nothing. A
// bad value in c is a *ConfigError.
func StartReferenceEngine(ctx context.Context, backendAddr, eventsToken string, c ReferenceEngineConfig) (*ReferenceEngine, error) {
	if !c.Enabled {
		return &ReferenceEngine{cancel: func() {}}, nil
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("reference engine: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &ReferenceEngine{cancel: cancel}
	backend := loopbackURL(backendAddr)
	r.wg.Go(func() {
		if !waitForBackend(ctx, backend+"/healthz") {
			ln.Close()
			return
		}
		cfg := engine.DefaultConfig()
		if c.Engine != nil {
			cfg = *c.Engine
		}
		base := "http://" + ln.Addr().String() + "/v1"
		log := logging.Or(c.log)
		log.Info(fmt.Sprintf("reference engine (a simulator) serving %q at %s with ~%g synthetic requests/s", cfg.Model, base, c.Rate),
			logkey.Model, cfg.Model, logkey.URL, base)
		r.wg.Go(func() {
			client := loadgen.New(base, loadgen.Options{})
			defer client.Close()
			client.Traffic(ctx, loadgen.TrafficOptions{Model: cfg.Model, RatePerSecond: c.Rate, Seed: uint64(time.Now().UnixNano())}, nil)
		})
		if err := engine.Serve(ctx, cfg, ln, engine.ServeOptions{PublishURL: backend, PublishToken: eventsToken, Logger: log}); err != nil {
			log.Error(fmt.Sprintf("reference engine: %v", err), logging.Err(err))
		}
	})
	return r, nil
}

// Handlers are none: the engine serves on its own loopback port.
func (r *ReferenceEngine) Handlers(*Handlers) {}

// Close stops the engine and the traffic and waits, within ctx, for both
// to end.
func (r *ReferenceEngine) Close(ctx context.Context) error {
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
