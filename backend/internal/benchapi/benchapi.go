// Package benchapi answers the bench-serve routes under /api/metrics: the
// profiles a run can start from, the jobs (start, list, get, cancel, their
// event log and report) and the history of finished runs. The route table
// (app.Routes) wires its Handlers.
package benchapi

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/history"
	"github.com/mlx-bun/mlx-metrics/backend/internal/jobs"
	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/backend/internal/profiles"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/gpu/lease"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// Limits of the list routes.
const (
	DefaultHistoryLimit = 50
	MaxHistoryLimit     = 1000
	DefaultJobLimit     = 50
	MaxJobLimit         = 1000
)

// API is the bench-serve feature.
type API struct {
	jobs     *jobs.Service
	history  *history.Store
	profiles *profiles.Dir
	lease    *lease.Lease
	opts     Options
	// unavailable, when set, is why bench-serve's storage could not open:
	// every route answers 503 with it.
	unavailable string

	jobStreams atomic.Int64 // clients following the jobs or a job's events
}

// Options configure an API. The zero value is the defaults.
type Options struct {
	// Logger reports a route's storage failing (slog.Default() when nil).
	Logger *slog.Logger
	// Clock judges an imported run's times and paces the streams
	// (clock.Real when nil).
	Clock clock.Clock
	// StreamWriteTimeout bounds one write to a client following the jobs
	// or a job's events: one that has not taken it by then is dropped
	// (30 s when 0).
	StreamWriteTimeout time.Duration
}

// New serves bench-serve over the job service, the history of finished
// runs, the profiles runs start from and the GPU lease.
func New(svc *jobs.Service, hist *history.Store, plans *profiles.Dir, l *lease.Lease, opts Options) *API {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	opts.Logger = logging.Or(opts.Logger)
	return &API{jobs: svc, history: hist, profiles: plans, lease: l, opts: opts}
}

// Unavailable is bench-serve whose storage could not open (a full disk, a
// home that cannot be written): every route answers 503 with reason, and
// the rest of the server (live metrics) is unaffected.
func Unavailable(reason string) *API {
	return &API{unavailable: reason, opts: Options{Clock: clock.Real{}}}
}

// Handlers are bench-serve's route handlers, each the route's under
// /api/metrics (the route table wires them).
type Handlers struct {
	Profiles    fiber.Handler // GET /bench/profiles
	Start       fiber.Handler // POST /bench
	Jobs        fiber.Handler // GET /bench: JSON, or a stream that follows the jobs
	Job         fiber.Handler // GET /bench/:id
	Cancel      fiber.Handler // DELETE /bench/:id
	JobEvents   fiber.Handler // GET /bench/:id/events: JSON, or a stream that follows them
	JobReport   fiber.Handler // GET /bench/:id/report
	JobRequests fiber.Handler // GET /bench/:id/requests/:file
	History     fiber.Handler // GET /history
	Import      fiber.Handler // POST /history
	Run         fiber.Handler // GET /history/:id
	Forget      fiber.Handler // DELETE /history/:id
}

// Handlers are a's route handlers; while the storage is unavailable each
// answers 503 with why.
func (a *API) Handlers() Handlers {
	h := func(handler fiber.Handler) fiber.Handler {
		if a.unavailable != "" {
			return a.serveUnavailable
		}
		return handler
	}
	return Handlers{
		Profiles: h(a.listProfiles), Start: h(a.start), Jobs: h(a.listJobs), Job: h(a.getJob), Cancel: h(a.cancelJob),
		JobEvents: h(a.jobEvents), JobReport: h(a.jobReport), JobRequests: h(a.jobRequests),
		History: h(a.listHistory), Import: h(a.importRun), Run: h(a.getHistory), Forget: h(a.deleteHistory),
	}
}

func (a *API) serveUnavailable(c *fiber.Ctx) error {
	return server.Error(c, fiber.StatusServiceUnavailable,
		"bench-serve is unavailable: "+a.unavailable+"; live metrics are still served; free the disk or fix the home and restart")
}
