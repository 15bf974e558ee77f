package store

import (
	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// model is one model's lifecycle state: the view it reports plus what the
// reducer needs to compute it.
type model struct {
	view          snapshot.Model
	loadStartedAt int64 // at of the pending model.load started, 0 when none
	unloadedAt    int64 // at of the last unload or failure; older samples are stale
	lastChange    lifecycle
	window        *requestWindow
	// scraped is the requests a scraped engine counted for the model
	// (requests.sample), nil before the first.
	scraped  *scrapedWindow
	lastSeen uint64 // the store's seq when an event last named it
	// The window's summary with the scraped requests in, as of the two
	// windows' versions (when mixedMade).
	mixed     snapshot.Window
	mixedOf   [2]uint64
	mixedMade bool
}

// lifecycle identifies a load or unload event: its at, its type and its
// phase or reason. A model cannot load or unload twice in one millisecond,
// so an event with the same identity as the last one is a repeat (a source
// delivering twice) and changes nothing.
type lifecycle struct {
	at   int64
	typ  events.Type
	what string
}

// repeat reports whether ev is the model's last lifecycle event again, and
// records it as the last one otherwise.
func (m *model) repeat(ev lifecycle) bool {
	if m.lastChange == ev {
		return true
	}
	m.lastChange = ev
	return false
}

// lookup returns the model named name, creating it in state when it is
// new; nil when the MaxModels bound is reached and no model can make room.
func (s *Store) lookup(name, state string, at int64) *model {
	if m, ok := s.models[name]; ok {
		m.lastSeen = s.seq
		return m
	}
	if len(s.models) >= s.opts.MaxModels && !s.evictIdle() {
		return nil
	}
	m := &model{view: snapshot.Model{Model: name, State: state, UpdatedAt: at}, lastSeen: s.seq}
	if !s.opts.NoPerModelWindows {
		if w := s.spareWindow; w != nil {
			// The window of a model forgotten to make room: a host cycling
			// through many models costs no new ring per model.
			w.reset()
			s.spareWindow = nil
			m.window = w
		} else {
			m.window = newRequestWindow(s.opts.Window)
		}
	}
	s.models[name] = m
	s.order = append(s.order, m)
	return m
}

// IdleTier is how readily a model may be forgotten to make room for a new
// one, for the store and the Prometheus exporter alike: 2 for one that
// never finished a load (loaded false: only named, loading without a
// finish, or failed), 1 for a loaded one that is now unloaded or failed,
// 0 (never) for a loaded one that is loading again or resident (live).
func IdleTier(loaded, live bool) int {
	switch {
	case !loaded:
		return 2
	case live:
		return 0
	}
	return 1
}

// evictIdle makes room for a new model by forgetting one that holds
// nothing: the least recently named model that never finished a load (a
// name a producer may have invented, whether only sampled, loading without
// a finish or failed: model.load started is as cheap to invent as a
// sample), or failing that the least recently named one that is unloaded
// or failed. A model that finished a load and is resident or loading again
// is never forgotten. It reports whether one was.
func (s *Store) evictIdle() bool {
	victim, victimTier := -1, 0
	for i, m := range s.order {
		tier := IdleTier(m.view.Loads > 0, m.view.State == snapshot.StateLoading || m.view.State == snapshot.StateResident)
		if tier == 0 {
			continue
		}
		if tier > victimTier || tier == victimTier && m.lastSeen < s.order[victim].lastSeen {
			victim, victimTier = i, tier
		}
	}
	if victim < 0 {
		return false
	}
	m := s.order[victim]
	s.spareWindow = m.window
	if m.scraped != nil {
		s.scrapedVersion++ // its requests leave the window over every model
	}
	s.order = append(s.order[:victim], s.order[victim+1:]...)
	delete(s.models, m.view.Model)
	delete(s.schedulers, m.view.Model)
	delete(s.caches, m.view.Model)
	s.series.forget(m.view.Model)
	s.evicted++
	return true
}

func ptr[T any](v T) *T { return &v }

func (s *Store) applyLoad(at int64, p *events.ModelLoad) bool {
	m := s.lookup(p.Model, snapshot.StateLoading, at)
	if m == nil || m.repeat(lifecycle{at, events.TypeModelLoad, p.Phase}) {
		return false
	}
	v := &m.view
	v.UpdatedAt = at
	switch p.Phase {
	case events.PhaseStarted:
		v.State = snapshot.StateLoading
		v.LastError = nil
		m.loadStartedAt = at
	case events.PhaseFinished:
		v.State = snapshot.StateResident
		v.Loads++
		v.LastError = nil
		// The host's ms includes restored state; without it the time since
		// the load started is the best measure, and without that it is
		// unknown, never the previous load's.
		var loadMs *float64
		switch {
		case p.Ms != nil:
			loadMs = ptr(*p.Ms)
		case m.loadStartedAt > 0 && at >= m.loadStartedAt:
			loadMs = ptr(float64(at - m.loadStartedAt))
		}
		v.LastLoadMs = loadMs
		m.loadStartedAt = 0
		if p.WeightsBytes != nil {
			v.WeightsBytes = *p.WeightsBytes
		}
		if s.creditSwap(m, at, loadMs) {
			s.timeline.mark(snapshot.ModelMark{At: at, Model: p.Model, Kind: snapshot.MarkSwap, Ms: v.LastSwapMs})
		} else {
			s.timeline.mark(snapshot.ModelMark{At: at, Model: p.Model, Kind: snapshot.MarkLoad, Ms: loadMs})
		}
	case events.PhaseFailed:
		v.State = snapshot.StateFailed
		msg := p.Error
		if msg == "" {
			msg = "load failed"
		}
		v.LastError = &msg
		m.loadStartedAt = 0
		s.clearResidency(m, at)
		s.timeline.mark(snapshot.ModelMark{At: at, Model: p.Model, Kind: snapshot.MarkFailed})
	}
	return true
}

// creditSwap counts a swap for a model that finished loading within the
// swap window of evicted unloads of other models: the time spent making
// room plus the load itself. Every eviction is credited at most once. It
// reports whether the load was a swap.
func (s *Store) creditSwap(m *model, at int64, loadMs *float64) bool {
	var unloadMs float64
	credited := false
	kept := s.evictions[:0]
	for _, e := range s.evictions {
		switch {
		case at-e.at > s.opts.SwapWindowMs:
			// Too old to have made room for this load: forget it.
		case e.model == m.view.Model || e.at > at:
			kept = append(kept, e)
		default:
			unloadMs += e.ms
			credited = true
		}
	}
	s.evictions = kept
	if !credited {
		return false
	}
	m.view.Swaps++
	if loadMs != nil {
		m.view.LastSwapMs = ptr(unloadMs + *loadMs)
	} else {
		m.view.LastSwapMs = nil // the load time is unknown, so is the swap's
	}
	return true
}

// maxEvictions bounds pending evictions; more than this within the swap
// window is not a real host.
const maxEvictions = 64

func (s *Store) applyUnload(at int64, p *events.ModelUnload) bool {
	m := s.lookup(p.Model, snapshot.StateUnloaded, at)
	if m == nil || m.repeat(lifecycle{at, events.TypeModelUnload, p.Reason}) {
		return false
	}
	v := &m.view
	v.UpdatedAt = at
	v.State = snapshot.StateUnloaded
	if p.Reason == events.ReasonFailed {
		v.State = snapshot.StateFailed
	}
	v.Unloads++
	ms := p.DrainMs
	if p.FlushMs != nil {
		ms += *p.FlushMs
	}
	v.LastUnloadMs = ptr(ms)
	v.LastUnloadReason = ptr(p.Reason)
	s.timeline.mark(snapshot.ModelMark{At: at, Model: p.Model, Kind: snapshot.MarkUnload, Ms: v.LastUnloadMs})
	m.loadStartedAt = 0
	s.clearResidency(m, at)
	if p.Reason == events.ReasonEvicted {
		if len(s.evictions) == maxEvictions {
			s.evictions = append(s.evictions[:0], s.evictions[1:]...)
		}
		s.evictions = append(s.evictions, eviction{model: p.Model, at: at, ms: ms})
	}
	return true
}

// clearResidency drops what a model held in memory once it is gone: its
// weights, KV and prefix bytes and its scheduler and cache entries. A gone
// model holds no memory: the host says so with an all-zero model.memory
// right after each unload (which the anchor needs to show 0), and the
// exporter drops the model's memory gauges, so both views agree at once.
func (s *Store) clearResidency(m *model, at int64) {
	m.view.WeightsBytes = 0
	m.view.KVBytes = 0
	m.view.PrefixCacheBytes = 0
	m.unloadedAt = at
	delete(s.schedulers, m.view.Model)
	delete(s.caches, m.view.Model)
	s.series.gone(m.view.Model, at)
}

// resident returns the model a sample describes, or nil when the sample
// must be ignored: the model is not in memory (unloaded or failed), the
// sample predates its last unload, or the model bound is reached. A model
// first seen through a sample was already resident when this store started
// listening.
func (s *Store) resident(name string, at int64) *model {
	m := s.lookup(name, snapshot.StateResident, at)
	if m == nil {
		return nil
	}
	switch m.view.State {
	case snapshot.StateUnloaded, snapshot.StateFailed:
		return nil
	}
	if at <= m.unloadedAt {
		return nil
	}
	return m
}

func (s *Store) applyMemory(at int64, p *events.ModelMemory) bool {
	m := s.resident(p.Model, at)
	if m == nil || at < m.view.UpdatedAt {
		return false
	}
	v := &m.view
	if v.WeightsBytes == p.WeightsBytes && v.KVBytes == p.KVBytes &&
		v.PrefixCacheBytes == p.PrefixCacheBytes && v.UpdatedAt == at {
		return false
	}
	v.WeightsBytes, v.KVBytes, v.PrefixCacheBytes = p.WeightsBytes, p.KVBytes, p.PrefixCacheBytes
	v.UpdatedAt = at
	return true
}

func (s *Store) applyScheduler(at int64, p *events.SchedulerSample) bool {
	if s.resident(p.Model, at) == nil {
		return false
	}
	sc := s.schedulers[p.Model]
	if sc == nil {
		sc = &snapshot.Scheduler{}
		s.schedulers[p.Model] = sc
	} else if at < sc.At {
		return false // out of order: the newer sample stands
	} else if at == sc.At && sc.SchedulerSample == *p {
		return false // a repeat
	}
	sc.SchedulerSample = *p
	sc.At = at
	s.series.add(at, p)
	// The resident models' scheduler as it now stands, summed in their
	// first-seen order (a float sum in map order would not be the same
	// sum twice).
	var tps float64
	var active, capacity, queued int
	for _, m := range s.order {
		if c := s.schedulers[m.view.Model]; c != nil {
			tps += c.TokensPerSecond
			active, capacity, queued = active+c.Active, capacity+c.Capacity, queued+c.Queued
		}
	}
	s.timeline.sampleScheduler(at, tps, active, capacity, queued)
	return true
}

func (s *Store) applyCache(at int64, p *events.CacheSample) bool {
	if s.resident(p.Model, at) == nil {
		return false
	}
	c := s.caches[p.Model]
	if c == nil {
		c = &modelCaches{model: p.Model}
		s.caches[p.Model] = c
	}
	if !c.apply(at, p) {
		return false
	}
	s.timeline.sampleCaches(at, s.caches)
	return true
}
