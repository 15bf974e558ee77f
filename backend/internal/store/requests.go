package store

import (
	"math"
	"sort"

	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

func (s *Store) applyRequest(at int64, p *events.RequestFinished) bool {
	s.finished++
	if i := finishIndex(p.Finish); i >= 0 {
		s.byFinish[i]++
	}
	r := newRequestRecord(p)
	s.window.add(r)
	s.timeline.addRequest(at, &r, p.Finish)
	// A request under no model (one the proxy's upstream refused, such as
	// an unknown model name) counts, but makes no model row.
	if p.Model != "" {
		if m := s.lookup(p.Model, snapshot.StateResident, at); m != nil && m.window != nil {
			m.window.add(r)
		}
	}
	s.recent.add(snapshot.Recent{RequestFinished: *p, At: at})
	return true
}

// null marks a timing that did not happen. Validation rejects NaN on the
// wire, so it cannot collide with a real value.
var null = math.NaN()

// requestRecord is what a window keeps of one request: plain values, no
// pointers, so the ring costs nothing to the garbage collector.
type requestRecord struct {
	queueMs, ttftMs, prefill, decode, tpotMs, totalMs float64
	promptTokens, cachedPromptTokens                  int64
}

func orNull(v *float64) float64 {
	if v == nil {
		return null
	}
	return *v
}

func newRequestRecord(p *events.RequestFinished) requestRecord {
	tpot := null
	if p.DecodeTokensPerSecond != nil && *p.DecodeTokensPerSecond > 0 {
		tpot = 1000 / *p.DecodeTokensPerSecond
	}
	return requestRecord{
		tpotMs:             tpot,
		queueMs:            orNull(p.QueueMs),
		ttftMs:             orNull(p.TTFTMs),
		prefill:            orNull(p.PrefillTokensPerSecond),
		decode:             orNull(p.DecodeTokensPerSecond),
		totalMs:            p.TotalMs,
		promptTokens:       p.PromptTokens,
		cachedPromptTokens: p.CachedPromptTokens,
	}
}

// requestWindow is the last size finished requests. Its summary is kept
// until a request is added: a snapshot of an unchanged window (the usual
// case for most models' windows) sorts nothing.
type requestWindow struct {
	ring[requestRecord]
	adds       uint64 // requests added, ever
	summaryOf  uint64 // adds when summarised, +1 (0: never)
	summarised snapshot.Window
}

func newRequestWindow(size int) *requestWindow {
	return &requestWindow{ring: newRing[requestRecord](size)}
}

func (w *requestWindow) add(r requestRecord) {
	w.ring.add(r)
	w.adds++
}

// reset empties the window for reuse by another model.
func (w *requestWindow) reset() {
	w.next, w.n, w.summaryOf = 0, 0, 0
}

// summary is the window's distributions; the result shares its
// distributions with later calls until the window changes, so callers must
// not modify them.
func (w *requestWindow) summary() snapshot.Window {
	if w.summaryOf != w.adds+1 {
		w.summarised = w.summarise()
		w.summaryOf = w.adds + 1
	}
	return w.summarised
}

func (w *requestWindow) summarise() snapshot.Window {
	recs := w.slice()
	out := snapshot.Window{Size: len(w.buf), Count: len(recs)}
	vals := make([]float64, 0, len(recs))
	dist := func(get func(requestRecord) float64) *snapshot.Distribution {
		vals = vals[:0]
		for _, r := range recs {
			if v := get(r); !math.IsNaN(v) {
				vals = append(vals, v)
			}
		}
		return distribution(vals)
	}
	out.QueueMs = dist(func(r requestRecord) float64 { return r.queueMs })
	out.TTFTMs = dist(func(r requestRecord) float64 { return r.ttftMs })
	out.PrefillTokensPerSecond = dist(func(r requestRecord) float64 { return r.prefill })
	out.DecodeTokensPerSecond = dist(func(r requestRecord) float64 { return r.decode })
	out.TotalMs = dist(func(r requestRecord) float64 { return r.totalMs })
	out.TPOTMs = dist(func(r requestRecord) float64 { return r.tpotMs })
	var prompt, cached int64
	for _, r := range recs {
		prompt += r.promptTokens
		cached += r.cachedPromptTokens
	}
	if prompt > 0 {
		share := float64(cached) / float64(prompt)
		out.CachedPromptShare = &share
	}
	return out
}

// distribution summarises vals, which it sorts in place; nil when empty.
// Percentiles are nearest-rank: the smallest value with at least q of the
// values at or below it, so every reported figure is an observed one.
func distribution(vals []float64) *snapshot.Distribution {
	if len(vals) == 0 {
		return nil
	}
	sort.Float64s(vals)
	var sum float64
	for _, v := range vals {
		sum += v
	}
	return &snapshot.Distribution{
		Count: len(vals),
		Mean:  sum / float64(len(vals)),
		P50:   nearestRank(vals, 0.50),
		P95:   nearestRank(vals, 0.95),
		P99:   nearestRank(vals, 0.99),
		Max:   vals[len(vals)-1],
	}
}

func nearestRank(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	return sorted[i]
}
