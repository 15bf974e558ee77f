package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/backend/internal/health"
	"github.com/mlx-bun/mlx-metrics/backend/internal/ingest"
	"github.com/mlx-bun/mlx-metrics/backend/internal/otlp"
	"github.com/mlx-bun/mlx-metrics/backend/internal/prom"
	"github.com/mlx-bun/mlx-metrics/backend/internal/proxy"
	"github.com/mlx-bun/mlx-metrics/backend/internal/scrape"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
)

// exportConfig holds the flags of the export side: the Prometheus
// exporter (always on), the OTLP push, the proxy and the scrapers.
type exportConfig struct {
	proxyTo        string
	scrapes        scrape.Targets
	scrapeInterval time.Duration
	otlp           otlp.Options
}

func addExportFlags(fs *flag.FlagSet, env *envDefaults) *exportConfig {
	cfg := &exportConfig{}
	fs.StringVar(&cfg.proxyTo, "proxy-to", os.Getenv("MLX_METRICS_PROXY_TO"),
		"front the OpenAI-compatible server at `URL` on /v1/* and measure each request (e.g. http://127.0.0.1:8000) (env MLX_METRICS_PROXY_TO)")
	fs.Var(&cfg.scrapes, "scrape",
		"poll an engine's Prometheus endpoint, `URL[,KIND[,MODEL]]` with kind vllm, sglang, llamacpp, mlx or auto; repeatable (env MLX_METRICS_SCRAPE, space-separated)")
	fs.DurationVar(&cfg.scrapeInterval, "scrape-interval", env.duration("MLX_METRICS_SCRAPE_INTERVAL", 2*time.Second),
		"poll --scrape targets every `DURATION` (env MLX_METRICS_SCRAPE_INTERVAL)")
	fs.StringVar(&cfg.otlp.Endpoint, "otlp-endpoint", os.Getenv("MLX_METRICS_OTLP_ENDPOINT"),
		"push the Prometheus metrics to the OTLP receiver at `URL`, e.g. http://127.0.0.1:4318 (HTTP) or http://127.0.0.1:4317 (gRPC); off when empty (env MLX_METRICS_OTLP_ENDPOINT)")
	fs.StringVar(&cfg.otlp.Protocol, "otlp-protocol", envOr("MLX_METRICS_OTLP_PROTOCOL", otlp.ProtocolHTTP),
		"OTLP `PROTOCOL`: "+otlp.ProtocolHTTP+" or "+otlp.ProtocolGRPC+" (env MLX_METRICS_OTLP_PROTOCOL)")
	fs.DurationVar(&cfg.otlp.Interval, "otlp-interval", env.duration("MLX_METRICS_OTLP_INTERVAL", otlp.DefaultInterval),
		"push to --otlp-endpoint every `DURATION` (env MLX_METRICS_OTLP_INTERVAL)")
	// Refused once the flags are parsed, as a bad --scrape is.
	for _, t := range strings.Fields(os.Getenv("MLX_METRICS_SCRAPE")) {
		if err := cfg.scrapes.Set(t); err != nil {
			env.errs = append(env.errs, fmt.Errorf("MLX_METRICS_SCRAPE: %w", err))
		}
	}
	return cfg
}

// exportSide is what startExport runs, a part of serve.
type exportSide struct {
	features    []server.Feature
	cancel      context.CancelFunc // stops the scrapers
	scrapers    sync.WaitGroup
	proxied     *ingest.Source // the proxy's measurements; nil without --proxy-to
	unsubscribe func()         // the exporter's subscription to the bus
	pusher      *otlp.Pusher   // nil without --otlp-endpoint
}

// otlpShutdownTimeout bounds the last push at shutdown.
const otlpShutdownTimeout = 5 * time.Second

// startExport subscribes the Prometheus exporter to the bus, starts the
// OTLP push from its registry, builds the proxy when asked, starts the
// scrapers, and adds their /healthz sections (otlp, proxy, scrape).
func startExport(ctx context.Context, cfg *exportConfig, b *bus.Bus, healthz *health.Health) (*exportSide, error) {
	if cfg.scrapeInterval <= 0 {
		return nil, fmt.Errorf("--scrape-interval must be > 0, got %v", cfg.scrapeInterval)
	}
	var (
		p       *proxy.Proxy
		proxied *ingest.Source
	)
	if cfg.proxyTo != "" {
		// The proxy's measurements are a source like the others: checked
		// against the events' bounds, counted in /healthz, their
		// rejections logged. Streams in flight end with ctx, or they would
		// hold serve's shutdown open until their generation finished.
		proxied = ingest.NewSource("proxy", b, true, ingest.Options{})
		var err error
		if p, err = proxy.New(cfg.proxyTo, proxied.Publish, proxy.Options{BaseContext: ctx}); err != nil {
			return nil, err
		}
		healthz.Add("proxy", func() any {
			return proxyHealth{Upstream: p.Upstream(), Events: proxied.Stats()}
		})
	}
	exp := prom.New()
	var pusher *otlp.Pusher
	if cfg.otlp.Endpoint != "" {
		o := cfg.otlp
		o.Logf = exportLogf
		var err error
		if pusher, err = otlp.Start(ctx, exp.Registry(), o); err != nil {
			return nil, fmt.Errorf("--otlp-endpoint: %w", err)
		}
		healthz.Add("otlp", func() any { return pusher.Stats() })
		exportLogf("pushing metrics to %s (%s) every %s", pusher.Stats().Endpoint, o.Protocol, o.Interval)
	}
	side := &exportSide{features: []server.Feature{exp}, pusher: pusher, proxied: proxied}
	side.unsubscribe = b.Subscribe("prometheus", 0, exp.Observe)
	if p != nil {
		side.features = append(side.features, p)
		exportLogf("proxying /v1/* to %s", p.Upstream())
	}
	sctx, cancel := context.WithCancel(ctx)
	side.cancel = cancel
	if len(cfg.scrapes) > 0 {
		scrapers := scrape.NewGroup(cfg.scrapes, b.Publish, scrape.Options{})
		healthz.Add("scrape", func() any { return scrapers.Stats() })
		side.scrapers.Go(func() { scrapers.Run(sctx, cfg.scrapeInterval) })
		exportLogf("scraping %s every %s", cfg.scrapes.String(), cfg.scrapeInterval)
	}
	return side, nil
}

// proxyHealth is the proxy's /healthz section: where it forwards, and the
// measurements it published (accepted, ignored) or rejected.
type proxyHealth struct {
	Upstream string       `json:"upstream"`
	Events   ingest.Stats `json:"events"`
}

// Features are GET /prometheus and, with --proxy-to, the proxy at /v1/*.
func (s *exportSide) Features() []server.Feature { return s.features }

// Close stops the scrapers and the exporter's subscription, logs the
// proxy's rejections not logged yet, then pushes to --otlp-endpoint a last
// time (within otlpShutdownTimeout and ctx), so a collector sees the final
// totals.
func (s *exportSide) Close(ctx context.Context) error {
	s.cancel()
	s.scrapers.Wait()
	s.unsubscribe()
	if s.proxied != nil {
		s.proxied.FlushLog()
	}
	if s.pusher == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, otlpShutdownTimeout)
	defer cancel()
	if err := s.pusher.Shutdown(ctx); err != nil {
		return fmt.Errorf("otlp: last push: %w", err)
	}
	return nil
}

// exportLogf writes one line of serve's log.
func exportLogf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "mlx-metrics: "+format+"\n", args...)
}
