package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/backend/internal/health"
	"github.com/mlx-bun/mlx-metrics/backend/internal/ingest"
	"github.com/mlx-bun/mlx-metrics/backend/internal/live"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/backend/internal/store"
)

// liveConfig is the live half's configuration: event sources and windows.
type liveConfig struct {
	eventsURL      string
	eventsURLToken string
	eventsToken    string
	replay         string
	replaySpeed    float64
	window         int
	recent         int
	series         int
}

func addLiveFlags(fs *flag.FlagSet, env *envDefaults) *liveConfig {
	c := &liveConfig{}
	fs.StringVar(&c.eventsURL, "events-url", os.Getenv("MLX_METRICS_EVENTS_URL"), "follow a host's event stream at `URL` (SSE or NDJSON), reconnecting with backoff (env MLX_METRICS_EVENTS_URL)")
	fs.StringVar(&c.eventsURLToken, "events-url-token", os.Getenv("MLX_METRICS_EVENTS_URL_TOKEN"), "bearer `TOKEN` sent to --events-url (env MLX_METRICS_EVENTS_URL_TOKEN)")
	fs.StringVar(&c.eventsToken, "events-token", os.Getenv("MLX_METRICS_EVENTS_TOKEN"), "producer-only bearer `TOKEN`: opens POST /api/metrics/events alone, beside --token (alone, it guards every change); none when empty (env MLX_METRICS_EVENTS_TOKEN)")
	fs.StringVar(&c.replay, "replay", os.Getenv("MLX_METRICS_REPLAY"), "replay the events recorded in the NDJSON `FILE` at start (env MLX_METRICS_REPLAY)")
	fs.Float64Var(&c.replaySpeed, "replay-speed", env.float("MLX_METRICS_REPLAY_SPEED", 0), "replay pace `FACTOR`: 0 as fast as possible, 1 real time, 10 ten times faster (env MLX_METRICS_REPLAY_SPEED)")
	fs.IntVar(&c.window, "window", env.int("MLX_METRICS_WINDOW", store.DefaultWindow), "the last `N` finished requests the timing distributions cover (env MLX_METRICS_WINDOW)")
	fs.IntVar(&c.recent, "recent", env.int("MLX_METRICS_RECENT", store.DefaultRecent), "the last `N` finished requests the snapshot lists in recent (env MLX_METRICS_RECENT)")
	fs.IntVar(&c.series, "series", env.int("MLX_METRICS_SERIES", store.DefaultSeries), "the last `N` scheduler samples the throughput series keeps (env MLX_METRICS_SERIES)")
	return c
}

// liveService is the live half running, a part of serve: the store and
// stream, and the event sources feeding the bus.
type liveService struct {
	live     *live.Live
	posted   *ingest.HTTP
	features []server.Feature
	cancel   context.CancelFunc
	sources  sync.WaitGroup
}

// startLive subscribes the store to b, starts the follower and the replay
// the flags ask for, and adds their /healthz sections.
func startLive(ctx context.Context, cfg *liveConfig, b *bus.Bus, healthz *health.Health) (*liveService, error) {
	for _, v := range []struct {
		name string
		n    int
	}{{"window", cfg.window}, {"recent", cfg.recent}, {"series", cfg.series}} {
		if v.n < 1 || v.n > 100_000 {
			return nil, fmt.Errorf("-%s %d: must be from 1 to 100000", v.name, v.n)
		}
	}
	if cfg.replaySpeed < 0 {
		return nil, fmt.Errorf("-replay-speed %v: must be >= 0", cfg.replaySpeed)
	}
	if cfg.replay != "" {
		if _, err := os.Stat(cfg.replay); err != nil {
			return nil, fmt.Errorf("-replay: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &liveService{cancel: cancel}
	s.live = live.New(b, live.Options{Store: store.Options{Window: cfg.window, Recent: cfg.recent, Series: cfg.series}})
	posted := ingest.NewHTTP(b, ingest.Options{})
	s.posted = posted
	s.features = []server.Feature{s.live, posted}
	// Every source's counts, under one section: /healthz lists each one
	// configured, and each logs its first rejection and then a paced count.
	sources := map[string]func() any{"http": func() any { return posted.Stats() }}

	if cfg.eventsURL != "" {
		f := ingest.NewFollower(b, cfg.eventsURL, ingest.FollowerOptions{Token: cfg.eventsURLToken})
		sources["follow"] = func() any { return f.Status() }
		s.sources.Add(1)
		go func() {
			defer s.sources.Done()
			f.Run(ctx)
		}()
	}
	if cfg.replay != "" {
		var (
			src   = ingest.NewSource("replay", b, false, ingest.Options{})
			mu    sync.Mutex // guards state
			state = map[string]any{"file": filepath.Base(cfg.replay), "done": false}
		)
		s.sources.Add(1)
		go func() {
			defer s.sources.Done()
			err := ingest.Replay(ctx, cfg.replay, src, cfg.replaySpeed)
			st := src.Stats()
			mu.Lock()
			state["done"] = true
			if err != nil && ctx.Err() == nil {
				state["error"] = err.Error()
				fmt.Fprintf(os.Stderr, "mlx-metrics: replay: %v\n", err)
			}
			mu.Unlock()
			fmt.Fprintf(os.Stderr, "mlx-metrics: replayed %s: accepted %d, ignored %d, rejected %d\n",
				cfg.replay, st.Accepted, st.Ignored, st.Rejected)
		}()
		sources["replay"] = func() any {
			mu.Lock()
			defer mu.Unlock()
			out := map[string]any{"events": src.Stats()}
			for k, v := range state {
				out[k] = v
			}
			return out
		}
	}
	healthz.Add("ingest", func() any {
		out := make(map[string]any, len(sources))
		for name, stats := range sources {
			out[name] = stats()
		}
		return out
	})
	healthz.Add("store", func() any { return s.live.Stats() })
	healthz.Add("stream", func() any { return s.live.StreamStats() })
	return s, nil
}

// Features are the store's routes (GET /snapshot and /stream) and POST /events.
func (s *liveService) Features() []server.Feature { return s.features }

// Close stops the sources (each logs the count of rejections it has not
// logged yet) and ends every stream, so the server can shut down without
// waiting on them: serve closes it before the server's Shutdown
// (app.App.CloseFirst).
func (s *liveService) Close(context.Context) error {
	s.cancel()
	s.sources.Wait()
	s.posted.FlushLog()
	s.live.Close()
	return nil
}
