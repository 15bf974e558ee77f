// Package live is the feature that serves the live metrics: it feeds the
// bus's events to the store and answers GET /snapshot and GET /stream.
package live

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/backend/internal/store"
	"github.com/mlx-bun/mlx-metrics/backend/internal/stream"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// Options configure the feature.
type Options struct {
	Store  store.Options
	Stream stream.Options
	// Queue bounds the store's bus queue. Reducing is far faster than any
	// source parses, so it only fills when the process is starved of CPU.
	Queue int
	Clock clock.Clock // clock.Real{} when nil; also the stream's
}

// DefaultQueue is the store's bus queue when Options.Queue is zero.
const DefaultQueue = 1 << 16

// Live holds the store behind a lock and serves it.
type Live struct {
	clock clock.Clock

	mu    sync.Mutex
	store *store.Store
	// sources are the followed sources' states (SetSource); their changes
	// are added to the store's version, so that one reaches the stream as
	// an event's change does.
	sources       []snapshot.Source
	sourceChanges uint64
	version       atomic.Uint64 // the snapshot's version, readable without the lock
	sanitized     atomic.Uint64
	lastSize      atomic.Int64 // bytes of the last encoded snapshot

	hub         *stream.Hub
	unsubscribe func()
}

// New subscribes a fresh store to b and starts the stream hub.
func New(b *bus.Bus, opts Options) *Live {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Stream.Clock == nil {
		opts.Stream.Clock = opts.Clock
	}
	if opts.Queue <= 0 {
		opts.Queue = DefaultQueue
	}
	l := &Live{
		clock: opts.Clock,
		store: store.New(opts.Clock.Now().UnixMilli(), opts.Store),
	}
	l.hub = stream.New(l, opts.Stream)
	l.unsubscribe = b.Subscribe("live-store", opts.Queue, l.Apply)
	return l
}

// Apply reduces one event into the store; a change is pushed to the
// stream's clients at once when none went out in the last Interval.
func (l *Live) Apply(ev events.Event) {
	if l.apply(ev) {
		l.hub.Notify()
	}
}

// apply reduces ev under the lock. The unlock is deferred: a panic in the
// reducer, which the bus recovers, must not leave the store locked (every
// snapshot, stream frame and health check would wait on it for good).
func (l *Live) apply(ev events.Event) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	changed := l.store.Apply(ev)
	if changed {
		l.version.Store(l.store.Version() + l.sourceChanges)
	}
	return changed
}

// SetSource sets the state of the followed source of src's kind and host,
// and pushes it to the stream's clients if it changed.
func (l *Live) SetSource(src snapshot.Source) {
	l.mu.Lock()
	i := slices.IndexFunc(l.sources, func(s snapshot.Source) bool { return s.Kind == src.Kind && s.Host == src.Host })
	changed := i < 0 || l.sources[i] != src
	if i < 0 {
		l.sources = append(l.sources, src)
	} else {
		l.sources[i] = src
	}
	if changed {
		l.sourceChanges++
		l.version.Store(l.store.Version() + l.sourceChanges)
	}
	l.mu.Unlock()
	if changed {
		l.hub.Notify()
	}
}

// Version is the store's version.
func (l *Live) Version() uint64 { return l.version.Load() }

// Snapshot builds the snapshot stamped at now.
func (l *Live) Snapshot(now time.Time) snapshot.Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	snap := l.store.Snapshot(now.UnixMilli())
	snap.Version += l.sourceChanges
	snap.Sources = slices.Clone(l.sources)
	return snap
}

// Encode is the snapshot as JSON, for the stream. It never fails (see
// snapshot.Encode); a snapshot that had to be sanitized is counted.
func (l *Live) Encode(now time.Time) (uint64, []byte, error) {
	snap := l.Snapshot(now)
	return snap.Version, l.encode(&snap), nil
}

func (l *Live) encode(snap *snapshot.Snapshot) []byte {
	// Sized from the last snapshot, so the buffer is allocated once.
	hint := int(l.lastSize.Load())
	data, sanitized := snapshot.AppendJSON(make([]byte, 0, hint+hint/8+512), snap)
	l.lastSize.Store(int64(len(data)))
	if sanitized {
		l.sanitized.Add(1)
	}
	return data
}

// Stats is the live store's health: snapshots that carried a number JSON
// cannot (never from validated events) and idle models forgotten to stay
// under the model bound.
type Stats struct {
	Models        int    `json:"models"`
	EvictedModels uint64 `json:"evictedModels"`
	Sanitized     uint64 `json:"sanitizedSnapshots"`
}

// Stats reads the store's counters.
func (l *Live) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{Models: l.store.Models(), EvictedModels: l.store.Evicted(), Sanitized: l.sanitized.Load()}
}

// StreamStats reports the stream hub's counters (for /healthz).
func (l *Live) StreamStats() stream.Stats { return l.hub.Stats() }

// Close stops consuming events and ends every stream.
func (l *Live) Close() {
	l.unsubscribe()
	l.hub.Close()
}

// HandleStream answers GET /stream: the snapshot as server-sent events.
func (l *Live) HandleStream(c *fiber.Ctx) error { return l.hub.Handler(c) }

// HandleSnapshot answers GET /snapshot.
func (l *Live) HandleSnapshot(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	snap := l.Snapshot(l.clock.Now())
	return c.Send(l.encode(&snap))
}
