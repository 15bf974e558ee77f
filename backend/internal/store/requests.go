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

// applyRequests counts a scraped engine's requests (requests.sample):
// in the totals, the timeline and the model's scraped window. Single
// requests are not known, so none is listed as recent.
func (s *Store) applyRequests(at int64, p *events.RequestsSample) bool {
	m := s.lookup(p.Model, snapshot.StateResident, at)
	if m == nil {
		return false
	}
	if m.scraped == nil {
		m.scraped = newScrapedWindow(s.opts.Window)
	}
	changed := m.scraped.add(at, p)
	if p.Finished > 0 || p.GenerationTokens > 0 {
		changed = true
	}
	if !changed {
		return false
	}
	s.scrapedVersion++
	s.finished += p.Finished
	s.byFinish[finishIndex(events.FinishStop)] += p.ByFinish.Stop
	s.byFinish[finishIndex(events.FinishLength)] += p.ByFinish.Length
	s.byFinish[finishIndex(events.FinishCancelled)] += p.ByFinish.Cancelled
	s.byFinish[finishIndex(events.FinishError)] += p.ByFinish.Error
	s.timeline.addRequests(at, p)
	return true
}

// windowSummary is the window over every model: the reported requests',
// and the scraped engines' last Window requests with them.
func (s *Store) windowSummary() snapshot.Window {
	base := s.window.summary()
	var ws []*scrapedWindow
	for _, m := range s.order {
		if m.scraped != nil {
			ws = append(ws, m.scraped)
		}
	}
	if len(ws) == 0 {
		return base
	}
	of := [2]uint64{s.window.adds, s.scrapedVersion}
	if !s.mixedMade || s.mixedOf != of {
		chunks, n := take(float64(s.opts.Window), ws...)
		s.mixed = withScraped(base, &s.window.sorted, s.window.promptTokens, s.window.cachedTokens, chunks, n)
		s.mixedOf, s.mixedMade = of, true
	}
	return s.mixed
}

// modelWindow is m's window, reported and scraped requests together;
// false when it holds none.
func (s *Store) modelWindow(m *model) (snapshot.Window, bool) {
	if m.scraped == nil || len(m.scraped.chunks) == 0 {
		if m.window == nil || m.window.n == 0 {
			return snapshot.Window{}, false
		}
		return m.window.summary(), true
	}
	// Without a window of its own (NoPerModelWindows), the scraped
	// requests alone.
	base, sorted, prompt, cached, adds := snapshot.Window{Size: s.opts.Window}, &[numTimings][]float64{}, int64(0), int64(0), uint64(0)
	if w := m.window; w != nil {
		base, sorted, prompt, cached, adds = w.summary(), &w.sorted, w.promptTokens, w.cachedTokens, w.adds
	}
	of := [2]uint64{adds, m.scraped.version}
	if !m.mixedMade || m.mixedOf != of {
		chunks, n := take(float64(s.opts.Window), m.scraped)
		m.mixed = withScraped(base, sorted, prompt, cached, chunks, n)
		m.mixedOf, m.mixedMade = of, true
	}
	return m.mixed, true
}

// null marks a timing that did not happen. Validation rejects NaN on the
// wire, so it cannot collide with a real value.
var null = math.NaN()

// requestRecord is what a window keeps of one request: plain values, no
// pointers, so the ring costs nothing to the garbage collector.
type requestRecord struct {
	queueMs, ttftMs, prefill, decode, tpotMs, totalMs  float64
	promptTokens, cachedPromptTokens, completionTokens int64
}

// orNull is *v, or null for nil; -0 (which validation lets through) reads
// as 0, so that no figure is reported as -0.
func orNull(v *float64) float64 {
	if v == nil {
		return null
	}
	return *v + 0
}

func newRequestRecord(p *events.RequestFinished) requestRecord {
	// A rate the bounds let through can still give a TPOT past them (a
	// denormal rate gives +Inf): such a TPOT is not measured.
	tpot := null
	if p.DecodeTokensPerSecond != nil && *p.DecodeTokensPerSecond > 0 {
		if t := 1000 / *p.DecodeTokensPerSecond; t <= events.MaxDurationMs {
			tpot = t
		}
	}
	return requestRecord{
		tpotMs:             tpot,
		queueMs:            orNull(p.QueueMs),
		ttftMs:             orNull(p.TTFTMs),
		prefill:            orNull(p.PrefillTokensPerSecond),
		decode:             orNull(p.DecodeTokensPerSecond),
		totalMs:            p.TotalMs + 0, // -0 as 0, as in orNull
		promptTokens:       p.PromptTokens,
		cachedPromptTokens: p.CachedPromptTokens,
		completionTokens:   p.CompletionTokens,
	}
}

// timings are a record's six timings, in the order a window keeps their
// distributions (QueueMs, TTFTMs, PrefillTokensPerSecond,
// DecodeTokensPerSecond, TotalMs, TPOTMs); null where one did not happen.
func (r *requestRecord) timings() [numTimings]float64 {
	return [numTimings]float64{r.queueMs, r.ttftMs, r.prefill, r.decode, r.totalMs, r.tpotMs}
}

const numTimings = 6

// requestWindow is the last size finished requests. A summary needs each
// timing's values in order. Adding a request only writes the ring (the hot
// path); the orders are brought up to date when a summary is asked for:
// by moving the few requests that came and went since the last one in or
// out of them (a binary search and a move of at most size values each),
// or, when more than incrementalLimit came, by sorting afresh. And the
// summary itself is kept until a request is added, so a snapshot of an
// unchanged window (the usual case for most models' windows) recomputes
// nothing.
type requestWindow struct {
	ring[requestRecord]
	adds uint64 // requests added, ever

	// sorted holds each timing's values in the window as it was when
	// summarised (adds was sortedAt), nulls left out, ascending; each
	// grows to the window's size at most. dropped are the requests that
	// have left the window since, while they are at most
	// incrementalLimit.
	sorted   [numTimings][]float64
	sortedAt uint64
	dropped  []requestRecord

	summaryOf  uint64 // adds when summarised, +1 (0: never)
	summarised snapshot.Window
	// The prompt and cached prompt tokens of the window's requests, as of
	// the summary.
	promptTokens, cachedTokens int64
}

// incrementalLimit is how many requests may come between two summaries
// for the orders to be updated request by request rather than sorted
// afresh: about where the moves cost what the sort does (for a window of
// 200).
const incrementalLimit = 8

func newRequestWindow(size int) *requestWindow {
	return &requestWindow{ring: newRing[requestRecord](size)}
}

// incremental says whether the orders can be brought up to date request
// by request after added requests: no more than incrementalLimit, and none
// of them gone again (no more than the window holds).
func (w *requestWindow) incremental(added uint64) bool {
	return added <= incrementalLimit && added <= uint64(len(w.buf))
}

func (w *requestWindow) add(r requestRecord) {
	if w.n == len(w.buf) && w.incremental(w.adds-w.sortedAt+1) {
		w.dropped = append(w.dropped, w.buf[w.next])
	}
	w.ring.add(r)
	w.adds++
}

// reset empties the window for reuse by another model.
func (w *requestWindow) reset() {
	w.next, w.n, w.summaryOf = 0, 0, 0
	w.adds, w.sortedAt = 0, 0
	w.promptTokens, w.cachedTokens = 0, 0
	for i := range w.sorted {
		w.sorted[i] = w.sorted[i][:0]
	}
	w.dropped = w.dropped[:0]
}

// summary is the window's distributions; the result shares its
// distributions with later calls until the window changes, so callers must
// not modify them.
func (w *requestWindow) summary() snapshot.Window {
	if w.summaryOf != w.adds+1 {
		w.sort()
		w.summarised = w.summarise()
		w.summaryOf = w.adds + 1
	}
	return w.summarised
}

// sort brings the orders up to date with the ring.
func (w *requestWindow) sort() {
	if added := w.adds - w.sortedAt; w.incremental(added) {
		for i := range w.dropped {
			for f, v := range w.dropped[i].timings() {
				if !math.IsNaN(v) {
					w.sorted[f] = removeSorted(w.sorted[f], v)
				}
			}
		}
		for k := range int(added) {
			r := &w.buf[(w.next-int(added)+k+len(w.buf))%len(w.buf)]
			for f, v := range r.timings() {
				if !math.IsNaN(v) {
					w.sorted[f] = insertSorted(w.sorted[f], v, len(w.buf))
				}
			}
		}
	} else {
		for f := range w.sorted {
			if cap(w.sorted[f]) < w.n {
				w.sorted[f] = make([]float64, 0, len(w.buf))
			}
			w.sorted[f] = w.sorted[f][:0]
		}
		for k := range w.n {
			for f, v := range w.buf[k].timings() {
				if !math.IsNaN(v) {
					w.sorted[f] = append(w.sorted[f], v)
				}
			}
		}
		for f := range w.sorted {
			sort.Float64s(w.sorted[f])
		}
	}
	w.sortedAt = w.adds
	w.dropped = w.dropped[:0]
}

func (w *requestWindow) summarise() snapshot.Window {
	out := snapshot.Window{Size: len(w.buf), Count: w.n}
	dists := [numTimings]**snapshot.Distribution{&out.QueueMs, &out.TTFTMs, &out.PrefillTokensPerSecond,
		&out.DecodeTokensPerSecond, &out.TotalMs, &out.TPOTMs}
	for i, d := range dists {
		*d = distribution(w.sorted[i])
	}
	var prompt, cached int64
	for k := range w.n {
		prompt += w.buf[k].promptTokens
		cached += w.buf[k].cachedPromptTokens
	}
	if w.n > 0 {
		l := &snapshot.Lengths{Bounds: snapshot.LengthBounds,
			Prompt:     make([]int, len(snapshot.LengthBounds)+1),
			Generation: make([]int, len(snapshot.LengthBounds)+1)}
		for k := range w.n {
			l.Prompt[lengthBucket(w.buf[k].promptTokens)]++
			l.Generation[lengthBucket(w.buf[k].completionTokens)]++
		}
		out.Lengths = l
	}
	if prompt > 0 {
		share := float64(cached) / float64(prompt)
		out.CachedPromptShare = &share
	}
	w.promptTokens, w.cachedTokens = prompt, cached
	return out
}

// insertSorted adds v to sorted in order, growing it (to at most size)
// only when it is full.
func insertSorted(sorted []float64, v float64, size int) []float64 {
	i := sort.SearchFloat64s(sorted, v)
	if len(sorted) == cap(sorted) {
		grown := make([]float64, len(sorted), min(max(2*cap(sorted), 8), size))
		copy(grown, sorted)
		sorted = grown
	}
	sorted = sorted[:len(sorted)+1]
	copy(sorted[i+1:], sorted[i:])
	sorted[i] = v
	return sorted
}

// removeSorted takes one v out of sorted, which holds it. Records hold no
// -0 (see orNull), so equal values are identical.
func removeSorted(sorted []float64, v float64) []float64 {
	if i := sort.SearchFloat64s(sorted, v); i < len(sorted) && sorted[i] == v {
		return append(sorted[:i], sorted[i+1:]...)
	}
	return sorted
}

// distribution summarises vals, which are in ascending order; nil when
// empty. Percentiles are nearest-rank: the smallest value with at least q
// of the values at or below it, so every reported figure is an observed
// one.
func distribution(vals []float64) *snapshot.Distribution {
	if len(vals) == 0 {
		return nil
	}
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
		Min:   vals[0],
		P1:    nearestRank(vals, 0.01),
		P5:    nearestRank(vals, 0.05),
	}
}

func nearestRank(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	return sorted[i]
}

// lengthBucket is the bucket of snapshot.Lengths a length falls in.
func lengthBucket(n int64) int {
	return sort.Search(len(snapshot.LengthBounds), func(i int) bool { return snapshot.LengthBounds[i] >= n })
}
