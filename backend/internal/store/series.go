package store

import (
	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// series is the throughput series: up to max points ordered by at, each the
// sum of the models' scheduler samples at that instant.
type series struct {
	max   int
	back  []seriesPoint // back[start:] are the points; cap 2*max amortises drops
	start int
	// spare holds the share slices of dropped points for new points to
	// reuse, so that a full series allocates nothing per sample.
	spare [][]share
}

// seriesPoint remembers each model's share so a repeated sample of the same
// model at the same at replaces its share instead of counting twice.
type seriesPoint struct {
	at     int64
	shares []share
}

type share struct {
	model                    string
	tps                      float64
	active, capacity, queued int
}

func newSeries(max int) series {
	return series{max: max, back: make([]seriesPoint, 0, 2*max)}
}

func (s *series) add(at int64, p *events.SchedulerSample) {
	sh := share{model: p.Model, tps: p.TokensPerSecond, active: p.Active, capacity: p.Capacity, queued: p.Queued}
	pts := s.back[s.start:]
	// Samples nearly always arrive in time order: look from the newest end.
	i := len(pts)
	for i > 0 && pts[i-1].at > at {
		i--
	}
	if i > 0 && pts[i-1].at == at {
		pts[i-1].put(sh)
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
	pts[i] = seriesPoint{at: at, shares: append(shares, sh)}
	if len(pts) > s.max {
		dropped := s.back[s.start].shares
		clear(dropped) // the model names go with the point
		s.spare = append(s.spare, dropped[:0])
		s.back[s.start] = seriesPoint{}
		s.start++
	}
}

func (pt *seriesPoint) put(sh share) {
	for i := range pt.shares {
		if pt.shares[i].model == sh.model {
			pt.shares[i] = sh
			return
		}
	}
	pt.shares = append(pt.shares, sh)
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
