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
	"github.com/mlx-bun/mlx-metrics/backend/internal/prom"
	"github.com/mlx-bun/mlx-metrics/backend/internal/proxy"
	"github.com/mlx-bun/mlx-metrics/backend/internal/scrape"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
)

// exportConfig holds the flags of the export side: the Prometheus
// exporter (always on), the proxy and the scrapers.
type exportConfig struct {
	proxyTo        string
	scrapes        scrape.Targets
	scrapeInterval time.Duration
}

func addExportFlags(fs *flag.FlagSet, env *envDefaults) *exportConfig {
	cfg := &exportConfig{}
	fs.StringVar(&cfg.proxyTo, "proxy-to", os.Getenv("MLX_METRICS_PROXY_TO"),
		"front this OpenAI-compatible server at /v1/* and measure each request (e.g. http://127.0.0.1:8000) (env MLX_METRICS_PROXY_TO)")
	fs.Var(&cfg.scrapes, "scrape",
		"poll an engine's Prometheus endpoint, URL[,kind[,model]] with kind vllm, sglang, llamacpp, mlx or auto; repeatable (env MLX_METRICS_SCRAPE, space-separated)")
	fs.DurationVar(&cfg.scrapeInterval, "scrape-interval", env.duration("MLX_METRICS_SCRAPE_INTERVAL", 2*time.Second),
		"how often to poll --scrape targets (env MLX_METRICS_SCRAPE_INTERVAL)")
	// Refused once the flags are parsed, as a bad --scrape is.
	for _, t := range strings.Fields(os.Getenv("MLX_METRICS_SCRAPE")) {
		if err := cfg.scrapes.Set(t); err != nil {
			env.errs = append(env.errs, fmt.Errorf("MLX_METRICS_SCRAPE: %w", err))
		}
	}
	return cfg
}

// exportSide is what startExport runs.
type exportSide struct {
	features []server.Feature
	stop     func()
}

// startExport subscribes the Prometheus exporter to the bus, builds the
// proxy when asked, and starts the scrapers.
func startExport(ctx context.Context, cfg *exportConfig, b *bus.Bus) (*exportSide, error) {
	if cfg.scrapeInterval <= 0 {
		return nil, fmt.Errorf("--scrape-interval must be > 0, got %v", cfg.scrapeInterval)
	}
	exp := prom.New()
	unsubscribe := b.Subscribe("prometheus", 0, exp.Observe)
	side := &exportSide{features: []server.Feature{exp}}
	if cfg.proxyTo != "" {
		// Streams in flight end with ctx, or they would hold serve's
		// shutdown open until their generation finished.
		p, err := proxy.New(cfg.proxyTo, b.Publish, proxy.WithBaseContext(ctx))
		if err != nil {
			unsubscribe()
			return nil, err
		}
		side.features = append(side.features, p)
		fmt.Fprintf(os.Stderr, "mlx-metrics: proxying /v1/* to %s\n", p.Upstream())
	}
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if len(cfg.scrapes) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			scrape.RunAll(sctx, cfg.scrapes, cfg.scrapeInterval, b.Publish)
		}()
		fmt.Fprintf(os.Stderr, "mlx-metrics: scraping %s every %s\n", cfg.scrapes.String(), cfg.scrapeInterval)
	}
	side.stop = func() {
		cancel()
		wg.Wait()
		unsubscribe()
	}
	return side, nil
}
