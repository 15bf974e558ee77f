// Package health serves GET /healthz, at the root for supervisors and load
// balancers and under /api/metrics for the host's module router. Features
// add their own sections (the event bus, the GPU lease, …) with Add.
package health

import (
	"sort"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// Options configure Health. The zero value is the defaults.
type Options struct {
	// Clock stamps each report's at and uptime (clock.Real{} when nil).
	Clock clock.Clock
}

// Health is the /healthz feature.
type Health struct {
	startedAt time.Time
	clock     clock.Clock

	mu       sync.Mutex
	sections map[string]func() any
}

// New returns a Health reporting uptime since startedAt.
func New(startedAt time.Time, opts Options) *Health {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	return &Health{startedAt: startedAt, clock: opts.Clock, sections: map[string]func() any{}}
}

// reserved are the top-level keys Health writes itself.
var reserved = map[string]bool{"status": true, "startedAt": true, "uptimeMs": true, "at": true, "degraded": true}

// StatusDegraded is the status of a section, and of the report, when a part
// of the server does not work.
const StatusDegraded = "degraded"

// sectionStatus is the status a section's result reports, if any.
func sectionStatus(v any) string {
	switch v := v.(type) {
	case interface{ Status() string }:
		return v.Status()
	case map[string]any:
		s, _ := v["status"].(string)
		return s
	}
	return ""
}

// Add registers a section: each request calls fn and reports its result under
// name. fn must be safe to call concurrently and quick. A section whose
// result says "status": "degraded" (a map with that key, or a value with a
// Status() string method) makes the whole report's status "degraded" and is
// named in its "degraded" list: the server still answers (live metrics need
// no disk), but a part of it does not work. Adding a name twice
// replaces the earlier section; the names status, at, startedAt and uptimeMs
// are Health's own and panic, as a programming error.
func (h *Health) Add(name string, fn func() any) {
	if reserved[name] {
		panic("health: section name " + name + " is reserved")
	}
	h.mu.Lock()
	h.sections[name] = fn
	h.mu.Unlock()
}

// Report is the body of GET /healthz.
func (h *Health) Report() map[string]any {
	h.mu.Lock()
	names := make([]string, 0, len(h.sections))
	for n := range h.sections {
		names = append(names, n)
	}
	fns := make([]func() any, len(names))
	sort.Strings(names)
	for i, n := range names {
		fns[i] = h.sections[n]
	}
	h.mu.Unlock()

	now := h.clock.Now()
	out := map[string]any{
		"status":    "ok",
		"at":        now.UnixMilli(),
		"startedAt": h.startedAt.UnixMilli(),
		"uptimeMs":  now.Sub(h.startedAt).Milliseconds(),
	}
	var degraded []string
	for i, n := range names {
		v := fns[i]()
		out[n] = v
		if sectionStatus(v) == StatusDegraded {
			degraded = append(degraded, n)
		}
	}
	if len(degraded) > 0 {
		out["status"] = StatusDegraded
		out["degraded"] = degraded
	}
	return out
}

// Handle answers GET /healthz (at the root and under the API) with the
// report.
func (h *Health) Handle(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(h.Report())
}
