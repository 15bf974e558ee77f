package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/backend/internal/health"
	"github.com/mlx-bun/mlx-metrics/backend/internal/ingest"
	"github.com/mlx-bun/mlx-metrics/backend/internal/live"
	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/backend/internal/store"
	"github.com/mlx-bun/mlx-metrics/shared/logkey"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// LiveConfig is the live half's configuration: event sources and windows
// (serve's flags named in each field).
type LiveConfig struct {
	EventsURL      string // --events-url: a host's event stream to follow
	EventsURLToken string // --events-url-token: sent to EventsURL
	// EventsToken (--events-token) is the producer-only token: it opens
	// POST /events alone, and the reference engine publishes with it.
	EventsToken string
	Replay      string  // --replay: an NDJSON file replayed at start
	ReplaySpeed float64 // --replay-speed: 0 as fast as possible
	Window      int     // --window: 1 to 100000
	Recent      int     // --recent: 1 to 100000
	Series      int     // --series: 1 to 100000
	// requests is shared with the export side's proxy (Start sets it), so
	// a request the proxy and another source both report counts once.
	requests *ingest.Requests
	// follow is the follower's clock and client, for tests (the defaults
	// when zero).
	follow ingest.FollowerOptions
	// log is serve's (Start sets it; slog.Default() when nil).
	log *slog.Logger
}

// Live is the live half running, a part of serve: the store and stream,
// and the event sources feeding the bus.
type Live struct {
	live    *live.Live
	posted  *ingest.HTTP
	cancel  context.CancelFunc
	sources sync.WaitGroup
}

// check refuses values the live half cannot run with.
func (c LiveConfig) check() error {
	for _, v := range []struct {
		name string
		n    int
	}{{"window", c.Window}, {"recent", c.Recent}, {"series", c.Series}} {
		if v.n < 1 || v.n > 100_000 {
			return configErrorf("-%s %d: must be from 1 to 100000", v.name, v.n)
		}
	}
	// NaN passes a plain < 0 test and would replay as fast as possible.
	if !(c.ReplaySpeed >= 0) {
		return configErrorf("-replay-speed %v: must be a number >= 0", c.ReplaySpeed)
	}
	if c.Replay != "" {
		if _, err := os.Stat(c.Replay); err != nil {
			return configErrorf("-replay: %w", err)
		}
	}
	return nil
}

// StartLive subscribes the store to b, starts the follower and the replay
// cfg asks for, and adds their /healthz sections to healthz. A bad value
// in cfg is a *ConfigError.
func StartLive(ctx context.Context, b *bus.Bus, healthz *health.Health, cfg LiveConfig) (*Live, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	log := logging.Or(cfg.log)
	ctx, cancel := context.WithCancel(ctx)
	s := &Live{cancel: cancel}
	s.live = live.New(b, live.Options{Store: store.Options{Window: cfg.Window, Recent: cfg.Recent, Series: cfg.Series}})
	posted := ingest.NewHTTP(b, ingest.Options{Requests: cfg.requests, Logger: log})
	s.posted = posted
	// Every source's counts, under one section: /healthz lists each one
	// configured, and each logs its first rejection and then a paced count.
	sources := map[string]func() any{"http": func() any { return posted.Stats() }}

	var follow *ingest.Follower
	if cfg.EventsURL != "" {
		// Its state goes into the snapshot, so the panel tells a host it
		// cannot reach from one with nothing to report.
		fo := cfg.follow
		fo.Token, fo.Requests = cfg.EventsURLToken, cfg.requests
		if fo.Logger == nil {
			fo.Logger = log
		}
		fo.OnChange = func() { s.live.SetSource(follow.Reach()) }
		f := ingest.NewFollower(b, cfg.EventsURL, fo)
		follow = f
		s.live.SetSource(f.Reach())
		sources["follow"] = func() any { return f.Status() }
		s.sources.Add(1)
		go func() {
			defer s.sources.Done()
			f.Run(ctx)
		}()
	}
	if cfg.Replay != "" {
		var (
			src   = ingest.NewSource("replay", b, ingest.Recorded, ingest.Options{Logger: log})
			mu    sync.Mutex // guards state
			state = map[string]any{"file": filepath.Base(cfg.Replay), "done": false}
		)
		s.sources.Add(1)
		go func() {
			defer s.sources.Done()
			err := ingest.Replay(ctx, cfg.Replay, src, cfg.ReplaySpeed)
			st := src.Stats()
			mu.Lock()
			state["done"] = true
			if err != nil && ctx.Err() == nil {
				state["error"] = err.Error()
				log.Error(fmt.Sprintf("replay: %v", err), logging.Err(err))
			}
			mu.Unlock()
			log.Info(fmt.Sprintf("replayed %s: accepted %d, ignored %d, rejected %d", cfg.Replay, st.Accepted, st.Ignored, st.Rejected),
				logkey.Path, cfg.Replay)
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
		out := make(map[string]any, len(sources)+2)
		for name, stats := range sources {
			out[name] = stats()
		}
		// A followed host not reached is a part that does not work.
		if follow != nil {
			if why := follow.Degraded(); why != "" {
				out["status"], out["reason"] = health.StatusDegraded, why
			}
		}
		return out
	})
	healthz.Add("store", func() any { return s.live.Stats() })
	healthz.Add("stream", func() any { return s.live.StreamStats() })
	return s, nil
}

// Handlers are the store's routes' (GET /snapshot and /stream) and POST
// /events'.
func (s *Live) Handlers(h *Handlers) { h.Live, h.Events = s.live, s.posted }

// Close stops the sources (each logs the count of rejections it has not
// logged yet) and ends every stream, so the server can shut down without
// waiting on them: Start closes it before the server's Shutdown
// (App.CloseFirst).
func (s *Live) Close(context.Context) error {
	s.cancel()
	s.sources.Wait()
	s.posted.FlushLog()
	s.live.Close()
	return nil
}

// Snapshot is the store's snapshot at now.
func (s *Live) Snapshot(now time.Time) snapshot.Snapshot { return s.live.Snapshot(now) }
