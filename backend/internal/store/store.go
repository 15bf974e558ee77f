// Package store reduces serving events to the live metrics snapshot.
//
// The Store is a pure reducer: its only clocks are the events' own at and
// the now passed to Snapshot, so one recorded stream always renders the same
// snapshot. It is not safe for concurrent use; the live feature guards it.
//
// Apply is the hot path (every event of every source): it keeps raw values
// in fixed rings and does no per-event allocation in the steady state;
// distributions are computed when a snapshot is built.
package store

import (
	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// Options size the store's windows. The zero value is the defaults; a zero
// (or negative) field takes its default, named in its comment.
type Options struct {
	// Window is how many finished requests the distributions cover (200).
	Window int
	// Recent is how many finished requests are listed as they were (20).
	Recent int
	// Series is how many scheduler points the throughput series keeps (120).
	Series int
	// SeriesIntervalMs is the throughput series' grid: samples in one
	// interval make one point (1 000 ms, a host's sampling period).
	SeriesIntervalMs int64
	// SwapWindowMs is how soon after an evicted unload a finished load
	// counts as a swap (120 000 ms).
	SwapWindowMs int64
	// MaxModels bounds the models tracked, so a producer inventing model
	// names cannot grow memory without bound (1024). Events naming a model
	// beyond it still count in the global request totals and window.
	MaxModels int
	// NoPerModelWindows turns off the request window kept per model (false:
	// each model has one).
	NoPerModelWindows bool
	// Timeline is how many intervals of TimelineIntervalMs the timeline
	// keeps (120: with the default interval, ten minutes).
	Timeline int
	// TimelineIntervalMs is the timeline's interval (5 000 ms).
	TimelineIntervalMs int64
}

// Defaults for Options.
const (
	DefaultWindow       = 200
	DefaultRecent       = 20
	DefaultSeries       = 120
	DefaultSeriesMs     = 1000
	DefaultSwapWindowMs = 120_000
	DefaultMaxModels    = 1024
	DefaultTimeline     = 120
	DefaultIntervalMs   = 5000
)

func (o Options) withDefaults() Options {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Recent <= 0 {
		o.Recent = DefaultRecent
	}
	if o.Series <= 0 {
		o.Series = DefaultSeries
	}
	if o.SeriesIntervalMs <= 0 {
		o.SeriesIntervalMs = DefaultSeriesMs
	}
	if o.SwapWindowMs <= 0 {
		o.SwapWindowMs = DefaultSwapWindowMs
	}
	if o.MaxModels <= 0 {
		o.MaxModels = DefaultMaxModels
	}
	if o.Timeline <= 0 {
		o.Timeline = DefaultTimeline
	}
	if o.TimelineIntervalMs <= 0 {
		o.TimelineIntervalMs = DefaultIntervalMs
	}
	return o
}

// Store holds the reduced state.
type Store struct {
	opts      Options
	startedAt int64
	version   uint64

	models     map[string]*model
	order      []*model // first seen first, as the anchor lists them
	schedulers map[string]*snapshot.Scheduler
	caches     map[string]*modelCaches
	evictions  []eviction // evicted unloads not yet credited to a swap
	seq        uint64     // counts events applied, for least-recently-used
	evicted    uint64     // idle models forgotten to make room
	// spareWindow is the request window of the last model forgotten, kept
	// for the next new model.
	spareWindow *requestWindow

	finished int64
	byFinish [len(finishNames)]int64
	window   *requestWindow
	recent   ring[snapshot.Recent]
	series   series
	timeline *timeline
	// scrapedVersion moves with every scraped window's change; the window
	// over every model with the scraped requests in is kept as of it and
	// the reported window's adds.
	scrapedVersion uint64
	mixed          snapshot.Window
	mixedOf        [2]uint64
	mixedMade      bool
}

// eviction is an evicted unload waiting for the load it made room for.
type eviction struct {
	model string
	at    int64
	ms    float64
}

var finishNames = [...]events.FinishReason{events.FinishStop, events.FinishLength, events.FinishCancelled, events.FinishError}

func finishIndex(f events.FinishReason) int {
	for i, n := range finishNames {
		if n == f {
			return i
		}
	}
	return -1
}

// New returns an empty store; startedAt (epoch ms) is reported as the
// snapshot's startedAt.
func New(startedAt int64, opts Options) *Store {
	opts = opts.withDefaults()
	return &Store{
		opts:       opts,
		startedAt:  startedAt,
		models:     map[string]*model{},
		schedulers: map[string]*snapshot.Scheduler{},
		caches:     map[string]*modelCaches{},
		window:     newRequestWindow(opts.Window),
		recent:     newRing[snapshot.Recent](opts.Recent),
		series:     newSeries(opts.Series, opts.SeriesIntervalMs),
		timeline:   newTimeline(opts.Timeline, opts.TimelineIntervalMs),
	}
}

// Options reports the options in effect, defaults filled in.
func (s *Store) Options() Options { return s.opts }

// Models is how many models the store tracks.
func (s *Store) Models() int { return len(s.models) }

// Evicted counts the idle, never-loaded models forgotten to make room for
// new ones under the MaxModels bound.
func (s *Store) Evicted() uint64 { return s.evicted }

// Version moves each time Apply changes the snapshot, and only then.
func (s *Store) Version() uint64 { return s.version }

// Apply reduces one event and reports whether it changed the snapshot.
// Events of ignored types, and samples older than what the store already
// holds for the same thing, change nothing.
func (s *Store) Apply(ev events.Event) bool {
	s.seq++
	var changed bool
	switch p := ev.Payload.(type) {
	case *events.ModelLoad:
		changed = s.applyLoad(ev.At, p)
	case *events.ModelUnload:
		changed = s.applyUnload(ev.At, p)
	case *events.ModelMemory:
		changed = s.applyMemory(ev.At, p)
	case *events.RequestFinished:
		changed = s.applyRequest(ev.At, p)
	case *events.SchedulerSample:
		changed = s.applyScheduler(ev.At, p)
	case *events.CacheSample:
		changed = s.applyCache(ev.At, p)
	case *events.RequestsSample:
		changed = s.applyRequests(ev.At, p)
	}
	if changed {
		s.version++
	}
	return changed
}

// Snapshot builds the snapshot as of now (epoch ms). The result shares
// nothing mutable with the store.
func (s *Store) Snapshot(now int64) snapshot.Snapshot {
	snap := snapshot.Snapshot{
		At:         now,
		StartedAt:  s.startedAt,
		Version:    s.version,
		Models:     make([]snapshot.Model, 0, len(s.order)),
		Schedulers: make([]snapshot.Scheduler, 0, len(s.schedulers)),
		Caches:     make([]snapshot.Cache, 0, len(s.caches)),
	}
	// Models first seen first; their scheduler and cache readings in the
	// same order.
	for _, m := range s.order {
		snap.Models = append(snap.Models, m.view)
	}
	for _, m := range s.order {
		if sc := s.schedulers[m.view.Model]; sc != nil {
			snap.Schedulers = append(snap.Schedulers, *sc)
		}
		if c := s.caches[m.view.Model]; c != nil {
			snap.Caches = append(snap.Caches, c.view())
		}
	}

	byFinish := make(snapshot.FinishTotals, len(finishNames))
	for i, n := range finishNames {
		byFinish[n] = s.byFinish[i]
	}
	snap.Requests = snapshot.Requests{
		Finished: s.finished,
		ByFinish: byFinish,
		Window:   s.windowSummary(),
		Recent:   s.recent.slice(),
	}
	if !s.opts.NoPerModelWindows {
		per := map[string]*snapshot.Window{}
		for name, m := range s.models {
			if w, ok := s.modelWindow(m); ok {
				per[name] = &w
			}
		}
		if len(per) > 0 {
			snap.Requests.Window.PerModel = per
		}
	}
	snap.Series = s.series.slice()
	snap.Timeline = s.timeline.points()
	snap.IntervalMs = s.opts.TimelineIntervalMs
	snap.Marks = s.timeline.marks.slice()
	return snap
}
