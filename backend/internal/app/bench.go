package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/benchapi"
	"github.com/mlx-bun/mlx-metrics/backend/internal/history"
	"github.com/mlx-bun/mlx-metrics/backend/internal/jobs"
	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/backend/internal/profiles"
	"github.com/mlx-bun/mlx-metrics/gpu/lease"
	"github.com/mlx-bun/mlx-metrics/gpu/plans"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// BenchConfig is bench-serve's configuration (serve's flags named in each
// field).
type BenchConfig struct {
	// Grace (--bench-grace) is a cancelled run's time between SIGTERM and
	// SIGKILL; more than 0.
	Grace time.Duration
	// MaxQueued (--bench-queue) bounds the runs waiting for the GPU; at
	// least 1.
	MaxQueued int
	// Runner and RunnerEnv replace the runner's command (this executable's
	// `bench run`) in tests.
	Runner    []string
	RunnerEnv []string
	// log is serve's (Start sets it; slog.Default() when nil).
	log *slog.Logger
}

// Bench is bench-serve in the backend: the plans directory (seeded with
// the ready profiles), the history, the GPU lease and the job service, and
// the routes over them. Storage lives under <home>/metrics (the manifest's
// history and bench keys).
type Bench struct {
	api   *benchapi.API
	hist  *history.Store // nil when degraded
	jobs  *jobs.Service  // nil when degraded
	plans *profiles.Dir  // nil when degraded
	lease *lease.Lease
	// degraded is why the storage did not open ("" when it did): the
	// bench routes then answer 503 with it, and live metrics go on.
	degraded string
	stopped  atomic.Bool // StopRuns has run
}

// check refuses values the job service would otherwise replace with its
// defaults without a word.
func (c BenchConfig) check() error {
	if c.Grace <= 0 {
		return configErrorf("-bench-grace %v: must be more than 0 (the runner's time to stop its servers and write its record)", c.Grace)
	}
	if c.MaxQueued < 1 {
		return configErrorf("-bench-queue %d: must be at least 1", c.MaxQueued)
	}
	return nil
}

// OpenBench opens bench-serve's storage under <home>/metrics, with a GPU
// lease of device (the lease's word for the GPUs). Only a bad value in cfg
// is an error (a *ConfigError): live metrics need no disk, so when the
// storage cannot open (a full disk, a home that cannot be written, a
// history Badger refuses) bench-serve comes up degraded, its routes
// answering 503 with the reason, and serve goes on.
func OpenBench(home, device string, cfg BenchConfig) (*Bench, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.log = logging.Or(cfg.log)
	l := lease.New(device, lease.Options{})
	b, err := openBenchStorage(home, l, cfg)
	if err != nil {
		cfg.log.Warn(fmt.Sprintf("bench-serve storage unavailable, serving live metrics only: %v", err), logging.Err(err))
		reason := benchapi.SafeMessage(err)
		return &Bench{api: benchapi.Unavailable(reason), lease: l, degraded: reason}, nil
	}
	return b, nil
}

func openBenchStorage(home string, l *lease.Lease, cfg BenchConfig) (*Bench, error) {
	root := filepath.Join(home, "metrics")
	dir := profiles.New(filepath.Join(root, "bench", "plans"))
	if err := dir.Seed(plans.Ready()); err != nil {
		return nil, fmt.Errorf("seed the ready bench profiles: %w", err)
	}
	hist, err := history.Open(filepath.Join(root, "history"), history.Options{RunsDir: filepath.Join(root, "bench", "runs"), Logger: cfg.log})
	if err != nil {
		return nil, err
	}
	svc, err := jobs.New(jobs.Options{
		RunsDir:   filepath.Join(root, "bench", "runs"),
		Lease:     l,
		Grace:     cfg.Grace,
		MaxQueued: cfg.MaxQueued,
		Runner:    cfg.Runner,
		Env:       cfg.RunnerEnv,
		Logger:    cfg.log,
		Finished: func(rec bench.RunRecord, runDir string) error {
			return hist.Put(bench.Compact(rec, runDir))
		},
	})
	if err != nil {
		hist.Close()
		return nil, fmt.Errorf("open the bench runs: %w", err)
	}
	return &Bench{
		api:  benchapi.New(svc, hist, dir, l, benchapi.Options{Logger: cfg.log}),
		hist: hist, jobs: svc, plans: dir, lease: l,
	}, nil
}

// health is bench-serve's /healthz section: whether its storage is up, how
// many unreadable history entries reads have met, any salvage of a damaged
// history at start, and any import of the original module's history files.
func (b *Bench) health() any {
	if b.degraded != "" {
		return map[string]any{"status": "degraded", "reason": b.degraded}
	}
	h := map[string]any{"status": "ok", "unreadableHistoryEntries": b.hist.Unreadable()}
	if sv := b.hist.Salvaged(); sv != nil {
		h["historySalvage"] = sv // damaged tables found at start, and what was kept
	}
	if up := b.hist.Upgraded(); up != nil {
		h["historyUpgrade"] = up // the original module's history files imported at start
	}
	return h
}

// Handlers are the bench and history routes'.
func (b *Bench) Handlers(h *Handlers) { h.Bench = b.api }

// StopRuns cancels the runs in progress, giving each runner its grace
// period (and ten seconds more, within ctx) to stop its servers and write
// its record, which ends the job streams. Start calls it before the
// server's Shutdown, since a client following a run's events holds the
// shutdown open until that run ends; the history stays open for the
// requests still in flight, until Close. Later calls do nothing.
func (b *Bench) StopRuns(ctx context.Context) error {
	if b.degraded != "" || b.stopped.Swap(true) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, b.jobs.Grace()+10*time.Second)
	defer cancel()
	if err := b.jobs.Close(ctx); err != nil {
		return fmt.Errorf("stop the bench runs: %w", err)
	}
	return nil
}

// Close stops the runs (StopRuns), if that has not been done, then closes
// the history.
func (b *Bench) Close(ctx context.Context) error {
	if b.degraded != "" {
		return nil
	}
	errs := []error{b.StopRuns(ctx)}
	// Not fatal: on a nearly full disk history declines to close
	// (history.ErrNotClosed) and the next start replays its log.
	if err := b.hist.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close the history: %w", err))
	}
	return errors.Join(errs...)
}

// Jobs is the job service; nil when degraded.
func (b *Bench) Jobs() *jobs.Service { return b.jobs }
