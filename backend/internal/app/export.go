package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/backend/internal/fleet"
	"github.com/mlx-bun/mlx-metrics/backend/internal/health"
	"github.com/mlx-bun/mlx-metrics/backend/internal/ingest"
	"github.com/mlx-bun/mlx-metrics/backend/internal/live"
	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/backend/internal/otlp"
	"github.com/mlx-bun/mlx-metrics/backend/internal/prom"
	"github.com/mlx-bun/mlx-metrics/backend/internal/proxy"
	"github.com/mlx-bun/mlx-metrics/backend/internal/scrape"
	"github.com/mlx-bun/mlx-metrics/shared/logkey"
)

// MinScrapeInterval bounds --scrape-interval from below: an engine's
// /metrics is a page of text to render, and polling it back to back would
// load the engine being measured.
const MinScrapeInterval = 100 * time.Millisecond

// ExportConfig is the export side's configuration: the Prometheus
// exporter (always on), the OTLP push, the proxy and the scrapers (serve's
// flags named in each field).
type ExportConfig struct {
	ProxyTo string // --proxy-to: the OpenAI-compatible server fronted at /v1/*
	// ProxyToken (--proxy-token) opens /v1/*; Config.Token does when it is
	// empty, and /v1 is open when both are.
	ProxyToken string
	// ProxyUpstreamToken (--proxy-upstream-token) is sent to the upstream
	// as its bearer token; none when empty.
	ProxyUpstreamToken string
	// ProxyHeadTimeout and ProxyIdleTimeout (--proxy-head-timeout,
	// --proxy-idle-timeout) bound the waits for an upstream answer's head
	// and for more of its body (proxy's defaults when 0).
	ProxyHeadTimeout, ProxyIdleTimeout time.Duration
	Scrapes                            scrape.Targets // --scrape: the engines' Prometheus endpoints to poll
	ScrapeInterval                     time.Duration  // --scrape-interval: at least MinScrapeInterval
	// PromNames (--prom-names) are the families /metrics serves: both
	// (the default when empty), mlx or vllm.
	PromNames string
	// OTLP (--otlp-endpoint, --otlp-protocol, --otlp-interval) pushes the
	// metrics when its Endpoint is set.
	OTLP otlp.Options
	// Fleet (--fleet, --fleet-host-label, --fleet-timeout) serves the fleet
	// view from a Prometheus-compatible query API when its URL is set.
	Fleet FleetConfig
	// requests is the live side's (Start sets it): the proxy's reports of
	// a request another source reports too count once.
	requests *ingest.Requests
	// log is serve's (Start sets it; slog.Default() when nil).
	log *slog.Logger
}

// Export is the export side running, a part of serve.
type Export struct {
	prom        *prom.Exporter
	fleet       *fleet.Feature
	proxy       *proxy.Proxy       // nil without --proxy-to
	cancel      context.CancelFunc // stops the scrapers
	scrapers    sync.WaitGroup
	proxied     *ingest.Source // the proxy's measurements; nil without --proxy-to
	unsubscribe func()         // the exporter's subscription to the bus
	pusher      *otlp.Pusher   // nil without --otlp-endpoint
}

// otlpShutdownTimeout bounds the last push at shutdown.
const otlpShutdownTimeout = 5 * time.Second

// check refuses values the export side cannot run with, naming the flag.
func (c ExportConfig) check() error {
	if c.ScrapeInterval < MinScrapeInterval {
		return configErrorf("--scrape-interval must be at least %v, got %v", MinScrapeInterval, c.ScrapeInterval)
	}
	if _, ok := prom.ParseNames(c.PromNames); !ok && c.PromNames != "" {
		return configErrorf("--prom-names %q: want both, mlx or vllm", c.PromNames)
	}
	if c.ProxyTo != "" {
		if err := proxy.CheckUpstream(c.ProxyTo); err != nil {
			return configErrorf("--proxy-to %w", err)
		}
	}
	for _, t := range []struct {
		flag string
		d    time.Duration
	}{{"--proxy-head-timeout", c.ProxyHeadTimeout}, {"--proxy-idle-timeout", c.ProxyIdleTimeout}} {
		if t.d < 0 || t.d > 0 && t.d < time.Second || t.d > 24*time.Hour {
			return configErrorf("%s %v: want from 1s to 24h (0: the default)", t.flag, t.d)
		}
	}
	if c.Fleet.URL != "" {
		if _, err := fleet.NewClient(c.Fleet.URL, fleet.Options{}); err != nil {
			return configErrorf("--fleet %q: %w", c.Fleet.URL, err)
		}
		if c.Fleet.HostLabel == "" || !promLabel.MatchString(c.Fleet.HostLabel) {
			return configErrorf("--fleet-host-label %q: want a Prometheus label name (instance, host)", c.Fleet.HostLabel)
		}
		if c.Fleet.Timeout < 100*time.Millisecond || c.Fleet.Timeout > 5*time.Minute {
			return configErrorf("--fleet-timeout %v: want from 100ms to 5m", c.Fleet.Timeout)
		}
	}
	if c.OTLP.Endpoint != "" {
		var oe *otlp.OptionError
		if _, err := c.OTLP.Check(); errors.As(err, &oe) {
			return configErrorf("--otlp-%s: %s", oe.Field, oe.Reason)
		} else if err != nil {
			return configErrorf("--otlp-endpoint: %w", err)
		}
	}
	return nil
}

// StartExport subscribes the Prometheus exporter to b, starts the OTLP
// push from its registry, builds the proxy when asked, starts the scrapers,
// and adds their /healthz sections (otlp, proxy, scrape) to healthz. A bad
// value in cfg is a *ConfigError.
func StartExport(ctx context.Context, b *bus.Bus, healthz *health.Health, cfg ExportConfig) (*Export, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	log := logging.Or(cfg.log)
	var (
		p       *proxy.Proxy
		proxied *ingest.Source
	)
	if cfg.ProxyTo != "" {
		// The proxy's measurements are a source like the others: checked
		// against the events' bounds, counted in /healthz, their
		// rejections logged. Streams in flight end with ctx, or they would
		// hold serve's shutdown open until their generation finished.
		proxied = ingest.NewSource(ingest.ProxySource, b, ingest.Live, ingest.Options{Requests: cfg.requests, Logger: log})
		var err error
		if p, err = proxy.New(cfg.ProxyTo, proxied.Publish, proxy.Options{BaseContext: ctx,
			HeadTimeout: cfg.ProxyHeadTimeout, IdleTimeout: cfg.ProxyIdleTimeout, UpstreamToken: cfg.ProxyUpstreamToken}); err != nil {
			return nil, &ConfigError{err}
		}
		healthz.Add("proxy", func() any {
			return proxyHealth{Upstream: p.Upstream(), Events: proxied.Stats()}
		})
	}
	names, _ := prom.ParseNames(cfg.PromNames)
	exp := prom.New(prom.Options{Names: names})
	var pusher *otlp.Pusher
	if cfg.OTLP.Endpoint != "" {
		o := cfg.OTLP
		o.Logger = log
		var err error
		if pusher, err = otlp.Start(ctx, exp.Registry(), o); err != nil {
			return nil, configErrorf("--otlp-endpoint: %w", err)
		}
		healthz.Add("otlp", func() any { return pusher.Stats() })
		log.Info(fmt.Sprintf("pushing metrics to %s (%s) every %s", pusher.Stats().Endpoint, o.Protocol, o.Interval),
			logkey.URL, pusher.Stats().Endpoint, logkey.Interval, o.Interval)
	}
	side := &Export{prom: exp, fleet: fleetFeature(log, cfg.Fleet, healthz), proxy: p, pusher: pusher, proxied: proxied}
	// As long a queue as the store's: a burst the store takes must not
	// cost the exporter's counters events (a drop is never made up). Four
	// POSTs of 20,000 events at once lost some 500 with the bus's default.
	side.unsubscribe = b.Subscribe("prometheus", live.DefaultQueue, exp.Observe)
	if p != nil {
		log.Info("proxying /v1/* to "+p.Upstream(), logkey.URL, p.Upstream())
	}
	sctx, cancel := context.WithCancel(ctx)
	side.cancel = cancel
	if len(cfg.Scrapes) > 0 {
		scrapers := scrape.NewGroup(cfg.Scrapes, b.Publish, scrape.Options{Logger: log})
		healthz.Add("scrape", func() any { return scrapers.Stats() })
		side.scrapers.Go(func() { scrapers.Run(sctx, cfg.ScrapeInterval) })
		log.Info(fmt.Sprintf("scraping %s every %s", cfg.Scrapes.String(), cfg.ScrapeInterval),
			logkey.URL, cfg.Scrapes.String(), logkey.Interval, cfg.ScrapeInterval)
	}
	return side, nil
}

// proxyHealth is the proxy's /healthz section: where it forwards, and the
// measurements it published (accepted, ignored) or rejected.
type proxyHealth struct {
	Upstream string       `json:"upstream"`
	Events   ingest.Stats `json:"events"`
}

// Handlers are GET /prometheus's (and /metrics' for a scraper), GET
// /fleet's and, with --proxy-to, the proxy's at /v1/*.
func (s *Export) Handlers(h *Handlers) { h.Prom, h.Fleet, h.Proxy = s.prom, s.fleet, s.proxy }

// Close stops the scrapers and the exporter's subscription, logs the
// proxy's rejections not logged yet, then pushes to --otlp-endpoint a last
// time (within otlpShutdownTimeout and ctx), so a collector sees the final
// totals.
func (s *Export) Close(ctx context.Context) error {
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

// FleetConfig is the fleet view's: the query API and how to read it.
type FleetConfig struct {
	URL       string        // --fleet: a Prometheus-compatible query API
	HostLabel string        // --fleet-host-label: instance, or a label the fleet sets
	Timeout   time.Duration // --fleet-timeout: one query's bound
	// Credentials, from the environment (MLX_METRICS_FLEET_TOKEN, or
	// MLX_METRICS_FLEET_USER and MLX_METRICS_FLEET_PASSWORD), never flags.
	BearerToken, Username, Password string
}

// promLabel is a Prometheus label name.
var promLabel = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// fleetFeature is GET /api/metrics/fleet: off ({"enabled": false})
// without a URL.
func fleetFeature(log *slog.Logger, c FleetConfig, healthz *health.Health) *fleet.Feature {
	if c.URL == "" {
		return &fleet.Feature{}
	}
	client, _ := fleet.NewClient(c.URL, fleet.Options{Timeout: c.Timeout,
		BearerToken: c.BearerToken, Username: c.Username, Password: c.Password})
	healthz.Add("fleet", func() any { return map[string]string{"source": client.URL(), "hostLabel": c.HostLabel} })
	log.Info(fmt.Sprintf("fleet view from the query API at %s (hosts by %s)", client.URL(), c.HostLabel), logkey.URL, client.URL())
	return &fleet.Feature{S: fleet.NewService(client, fleet.Config{HostLabel: c.HostLabel})}
}
