// Package benchapi mounts the bench-serve routes under /api/metrics: the
// profiles a run can start from, the jobs (start, list, get, cancel, their
// event log and report) and the history of finished runs.
package benchapi

import (
	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/history"
	"github.com/mlx-bun/mlx-metrics/backend/internal/jobs"
	"github.com/mlx-bun/mlx-metrics/backend/internal/profiles"
	"github.com/mlx-bun/mlx-metrics/gpu/lease"
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
	Jobs     *jobs.Service
	History  *history.Store
	Profiles *profiles.Dir
	Lease    *lease.Lease
}

// Mount adds the routes; /bench/profiles comes before /bench/:id.
func (a *API) Mount(_ *fiber.App, api fiber.Router) {
	api.Get("/bench/profiles", a.listProfiles)
	api.Post("/bench", a.start)
	api.Get("/bench", a.listJobs)
	api.Get("/bench/:id", a.getJob)
	api.Delete("/bench/:id", a.cancelJob)
	api.Get("/bench/:id/events", a.jobEvents)
	api.Get("/bench/:id/report", a.jobReport)
	api.Get("/history", a.listHistory)
	api.Get("/history/:id", a.getHistory)
	api.Delete("/history/:id", a.deleteHistory)
}
