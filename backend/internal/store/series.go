package store

import (
	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// series is the throughput series: up to max points ordered in time, one a
// slot of the grid (SeriesIntervalMs) that a sample fell in. A point sums
// every model's share: its own samples in the slot (their mean rate, its
// latest gauges), or, for a model that sampled no sample in the slot, its
// latest sample before it, carried while it is fresh (within twice the
// model's own sampling gap) and the model is not unloaded. Each source
// samples at its own moments (scraped engines each at their poll, a host's
// models each on their own timer), so a point holds every model's latest
// rate, not only those sampled in its millisecond.
type series struct {
	max  int
	grid int64
	back []seriesPoint // back[start:] are the points; cap 2*max amortises drops
	// start indexes the oldest point in back.
	start int
	// spare holds the share slices of dropped points for new points to
	// reuse, so that a full series allocates nothing per sample.
	spare [][]share
	// models is each model's latest sample, for the points after it.
	models map[string]*modelSamples
}

// modelSamples is what the series knows of one model's sampling.
type modelSamples struct {
	at     int64 // its newest sample's at
	gap    int64 // between its last two samples; 0 before a second
	goneAt int64 // its last unload; no sample of before is carried past it
}

// seriesPoint is one slot's shares.
type seriesPoint struct {
	slot   int64
	at     int64 // the newest sample's at in the slot
	shares []share
}

// share is one model's part of a point: its own samples in the slot (n of
// them, their mean rate), or with n 0 its latest sample before the slot,
// carried. last and lastTPS are the sample its gauges come from.
type share struct {
	model                    string
	tps                      float64
	n                        int
	last                     int64
	lastTPS                  float64
	active, capacity, queued int
}

func newSeries(max int, grid int64) series {
	return series{max: max, grid: grid, back: make([]seriesPoint, 0, 2*max), models: map[string]*modelSamples{}}
}

// hold is how long a model's sample is carried to the points after it.
func (s *series) hold(m *modelSamples) int64 {
	if m == nil || m.gap == 0 {
		return 2 * s.grid
	}
	return 2 * max(m.gap, s.grid)
}

// carries reports whether sh may be carried to a point at at.
func (s *series) carries(sh *share, at int64) bool {
	m := s.models[sh.model]
	return at-sh.last <= s.hold(m) && (m == nil || sh.last > m.goneAt || at <= m.goneAt)
}

func (s *series) add(at int64, p *events.SchedulerSample) {
	own := share{model: p.Model, tps: p.TokensPerSecond, n: 1, last: at, lastTPS: p.TokensPerSecond,
		active: p.Active, capacity: p.Capacity, queued: p.Queued}
	m := s.models[p.Model]
	if m == nil {
		m = &modelSamples{at: at}
		s.models[p.Model] = m
	} else if at > m.at {
		m.gap, m.at = at-m.at, at
	}
	slot := at / s.grid
	pts := s.back[s.start:]
	// Samples nearly always arrive in time order: look from the newest end.
	i := len(pts)
	for i > 0 && pts[i-1].slot > slot {
		i--
	}
	if i > 0 && pts[i-1].slot == slot {
		pts[i-1].put(own)
		pts[i-1].at = max(pts[i-1].at, at)
		s.carryForward(i, own)
		return
	}
	if i == 0 && len(pts) == s.max {
		return // older than every point of a full series
	}
	if len(s.back) == cap(s.back) {
		// Out of room at the end: move the points to the front.
		n := copy(s.back, pts)
		clear(s.back[n:])
		s.back, s.start = s.back[:n], 0
	}
	s.back = append(s.back, seriesPoint{})
	pts = s.back[s.start:]
	copy(pts[i+1:], pts[i:])
	var shares []share
	if n := len(s.spare); n > 0 {
		shares, s.spare = s.spare[n-1], s.spare[:n-1]
	}
	if i > 0 {
		for _, sh := range pts[i-1].shares {
			if sh.model != p.Model && s.carries(&sh, at) {
				sh.tps, sh.n = sh.lastTPS, 0
				shares = append(shares, sh)
			}
		}
	}
	pts[i] = seriesPoint{slot: slot, at: at, shares: append(shares, own)}
	s.carryForward(i+1, own)
	if len(pts) > s.max {
		dropped := s.back[s.start].shares
		clear(dropped) // the model names go with the point
		s.spare = append(s.spare, dropped[:0])
		s.back[s.start] = seriesPoint{}
		s.start++
	}
}

// carryForward gives the points from i on, until one with samples of the
// model's own, the sample sh where they carried an older one of its model
// or none while sh is fresh: a sample that came late.
func (s *series) carryForward(i int, sh share) {
	pts := s.back[s.start:]
	carried := sh
	carried.tps, carried.n = sh.lastTPS, 0
	for ; i < len(pts); i++ {
		pt := &pts[i]
		k := pt.find(sh.model)
		switch {
		case k >= 0 && pt.shares[k].n > 0:
			return // its own samples from here
		case k >= 0 && pt.shares[k].last < sh.last:
			pt.shares[k] = carried
		case k < 0 && s.carries(&carried, pt.at):
			pt.shares = append(pt.shares, carried)
		}
	}
}

// gone stops a model's samples at its unload at: no point after it
// carries one taken before.
func (s *series) gone(model string, at int64) {
	m := s.models[model]
	if m == nil {
		return
	}
	m.goneAt = max(m.goneAt, at)
	pts := s.back[s.start:]
	for i := len(pts) - 1; i >= 0 && pts[i].at > at; i-- {
		if k := pts[i].find(model); k >= 0 && pts[i].shares[k].n == 0 && pts[i].shares[k].last <= at {
			pts[i].shares = append(pts[i].shares[:k], pts[i].shares[k+1:]...)
		}
	}
}

// forget drops what the series knows of a model the store forgot; the
// points keep their shares.
func (s *series) forget(model string) { delete(s.models, model) }

func (pt *seriesPoint) find(model string) int {
	for k := range pt.shares {
		if pt.shares[k].model == model {
			return k
		}
	}
	return -1
}

// put takes a model's own sample into the point: it replaces a carried
// share; among its own samples a repeat (the same at) replaces the one it
// repeats, another counts in the mean rate, and the newest gives the
// gauges.
func (pt *seriesPoint) put(sh share) {
	k := pt.find(sh.model)
	if k < 0 {
		pt.shares = append(pt.shares, sh)
		return
	}
	cur := &pt.shares[k]
	switch {
	case cur.n == 0:
		*cur = sh
	case sh.last == cur.last:
		cur.tps += (sh.lastTPS - cur.lastTPS) / float64(cur.n)
		cur.lastTPS = sh.lastTPS
		cur.active, cur.capacity, cur.queued = sh.active, sh.capacity, sh.queued
	default:
		cur.tps = (cur.tps*float64(cur.n) + sh.lastTPS) / float64(cur.n+1)
		cur.n++
		if sh.last > cur.last {
			cur.last, cur.lastTPS = sh.last, sh.lastTPS
			cur.active, cur.capacity, cur.queued = sh.active, sh.capacity, sh.queued
		}
	}
}

// slice returns the points oldest first, shares summed.
func (s *series) slice() []snapshot.SeriesPoint {
	pts := s.back[s.start:]
	out := make([]snapshot.SeriesPoint, len(pts))
	for i, pt := range pts {
		o := snapshot.SeriesPoint{At: pt.at}
		for _, sh := range pt.shares {
			o.TokensPerSecond += sh.tps
			o.Active += sh.active
			o.Capacity += sh.capacity
			o.Queued += sh.queued
		}
		out[i] = o
	}
	return out
}
