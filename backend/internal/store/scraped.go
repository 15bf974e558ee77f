package store

import (
	"math"
	"slices"
	"sort"

	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// A scraped engine (--scrape) reports no single requests: each poll brings
// the increase of its request histograms (requests.sample). A model's
// scraped window keeps those increases in chunks, newest last, enough of
// them to cover the last Window requests; a summary takes chunks newest
// first until they count Window requests, the oldest taken pro-rated, and
// reads the distributions off their buckets as Prometheus'
// histogram_quantile does (linear within a bucket, the bucket over every
// bound read as the highest bound).

// The scraped histograms a window keeps, by index.
const (
	scrapedQueue = iota
	scrapedTTFT
	scrapedTotal
	scrapedTPOT
	scrapedPrompt
	scrapedGeneration
	numScraped
)

// hpart is one histogram: per-bucket counts over bounds (the last count
// over every bound) and their sum.
type hpart struct {
	bounds []float64
	counts []float64
	sum    float64
}

// newPart copies h, or is nil when h holds nothing or has no bound to
// place a value by.
func newPart(h *events.Histogram) *hpart {
	if h == nil || len(h.Bounds) == 0 || h.Count() == 0 {
		return nil
	}
	p := &hpart{bounds: h.Bounds, counts: make([]float64, len(h.Counts)), sum: h.Sum}
	for i, c := range h.Counts {
		p.counts[i] = float64(c)
	}
	return p
}

// add sums h into p, reporting false (and changing nothing) when their
// bounds differ.
func (p *hpart) add(h *events.Histogram) bool {
	if !slices.Equal(p.bounds, h.Bounds) {
		return false
	}
	for i, c := range h.Counts {
		p.counts[i] += float64(c)
	}
	p.sum += h.Sum
	return true
}

func (p *hpart) count() float64 {
	var n float64
	for _, c := range p.counts {
		n += c
	}
	return n
}

// scrapedChunk is the sum of successive requests.sample of one model.
type scrapedChunk struct {
	at     int64   // the newest sample's
	weight float64 // the requests it counts
	h      [numScraped]*hpart
	// The token counters' increases, of the samples that counted cached
	// prompt tokens (the others tell no cached share).
	promptTokens, cachedTokens float64
}

func (c *scrapedChunk) histograms(p *events.RequestsSample) [numScraped]*events.Histogram {
	return [numScraped]*events.Histogram{p.QueueMs, p.TTFTMs, p.TotalMs, p.TPOTMs, p.PromptLengths, p.GenerationLengths}
}

// fits reports whether p's histograms have the chunk's bounds where both
// have one.
func (c *scrapedChunk) fits(p *events.RequestsSample) bool {
	for i, h := range c.histograms(p) {
		if h != nil && h.Count() > 0 && c.h[i] != nil && !slices.Equal(c.h[i].bounds, h.Bounds) {
			return false
		}
	}
	return true
}

func (c *scrapedChunk) add(at int64, p *events.RequestsSample) {
	c.at = max(c.at, at)
	c.weight += sampleWeight(p)
	for i, h := range c.histograms(p) {
		if h == nil || h.Count() == 0 {
			continue
		}
		if c.h[i] == nil {
			c.h[i] = newPart(h)
		} else {
			c.h[i].add(h)
		}
	}
	if p.CachedPromptTokens != nil {
		c.promptTokens += float64(p.PromptTokens)
		c.cachedTokens += float64(*p.CachedPromptTokens)
	}
}

// sampleWeight is the requests a sample counts: those finished, or those
// its end-to-end histogram counts when it counts more (an engine that
// counts no finished requests of its own).
func sampleWeight(p *events.RequestsSample) float64 {
	n := p.Finished
	if p.TotalMs != nil {
		n = max(n, p.TotalMs.Count())
	}
	return float64(n)
}

// maxChunks bounds a model's chunks whatever the samples weigh (a poll
// with no finished request weighs nothing).
const maxChunks = 64

// scrapedWindow is one model's scraped requests, in chunks oldest first.
type scrapedWindow struct {
	size    float64 // the window, in requests
	target  float64 // a chunk's weight before a new one starts
	chunks  []scrapedChunk
	version uint64 // moves with every change
}

func newScrapedWindow(size int) *scrapedWindow {
	return &scrapedWindow{size: float64(size), target: math.Ceil(float64(size) / 8)}
}

// add takes in one sample, reporting whether it changed anything.
func (w *scrapedWindow) add(at int64, p *events.RequestsSample) bool {
	if sampleWeight(p) == 0 && p.PromptTokens == 0 && !anyCount(p) {
		return false
	}
	n := len(w.chunks)
	if n == 0 || w.chunks[n-1].weight >= w.target && sampleWeight(p) > 0 || !w.chunks[n-1].fits(p) || at < w.chunks[n-1].at {
		w.chunks = append(w.chunks, scrapedChunk{})
		n++
	}
	w.chunks[n-1].add(at, p)
	// Forget the chunks the newer ones cover the window without.
	var newer float64
	keep := 0
	for i := n - 1; i >= 0; i-- {
		if newer >= w.size || n-i > maxChunks {
			break
		}
		newer += w.chunks[i].weight
		keep++
	}
	if drop := n - keep; drop > 0 {
		w.chunks = append(w.chunks[:0], w.chunks[drop:]...)
	}
	w.version++
	return true
}

func anyCount(p *events.RequestsSample) bool {
	for _, h := range []*events.Histogram{p.QueueMs, p.TTFTMs, p.TotalMs, p.TPOTMs, p.PromptLengths, p.GenerationLengths} {
		if h != nil && h.Count() > 0 {
			return true
		}
	}
	return false
}

// taken is a chunk a window summary takes, whole (f 1) or pro-rated.
type taken struct {
	c *scrapedChunk
	f float64
}

// take lists the chunks of ws that cover the last size requests, newest
// first, the oldest pro-rated; and the requests they count.
func take(size float64, ws ...*scrapedWindow) ([]taken, float64) {
	var all []*scrapedChunk
	for _, w := range ws {
		for i := range w.chunks {
			all = append(all, &w.chunks[i])
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].at > all[j].at })
	var out []taken
	var n float64
	for _, c := range all {
		if n >= size {
			break
		}
		f := 1.0
		if c.weight > 0 && n+c.weight > size {
			f = (size - n) / c.weight
		}
		n += f * c.weight
		out = append(out, taken{c, f})
	}
	return out, n
}

// withScraped is base (the window of reported requests, whose sorted
// values are sorted and token sums prompt and cached) with the scraped
// chunks in: counts added, distributions over both.
func withScraped(base snapshot.Window, sorted *[numTimings][]float64, prompt, cached int64, chunks []taken, n float64) snapshot.Window {
	out := base
	out.Count = base.Count + int(math.Round(n))
	// The window's timings, in requestRecord.timings' order, and the
	// scraped histogram each takes in.
	dists := [numTimings]**snapshot.Distribution{&out.QueueMs, &out.TTFTMs, &out.PrefillTokensPerSecond,
		&out.DecodeTokensPerSecond, &out.TotalMs, &out.TPOTMs}
	from := [numTimings]int{scrapedQueue, scrapedTTFT, -1, -1, scrapedTotal, scrapedTPOT}
	for i, d := range dists {
		if from[i] < 0 {
			continue
		}
		var parts []weightedPart
		for _, t := range chunks {
			if p := t.c.h[from[i]]; p != nil {
				parts = append(parts, weightedPart{p, t.f})
			}
		}
		if len(parts) > 0 {
			*d = mixedDistribution(sorted[i], parts)
		}
	}
	p, c := float64(prompt), float64(cached)
	for _, t := range chunks {
		p += t.f * t.c.promptTokens
		c += t.f * t.c.cachedTokens
	}
	if p > 0 {
		out.CachedPromptShare = ptr(c / p)
	}
	out.Lengths = scrapedLengths(base.Lengths, chunks)
	return out
}

// scrapedLengths adds the chunks' length histograms to l (nil when empty),
// each bucket's requests spread over snapshot.LengthBounds as
// histogram_quantile would spread them (evenly within the bucket), and the
// requests over every bound of the engine's just over its highest.
func scrapedLengths(l *snapshot.Lengths, chunks []taken) *snapshot.Lengths {
	nb := len(snapshot.LengthBounds) + 1
	prompt, generation := make([]float64, nb), make([]float64, nb)
	any := false
	for _, t := range chunks {
		for k, dst := range [2][]float64{prompt, generation} {
			p := t.c.h[[2]int{scrapedPrompt, scrapedGeneration}[k]]
			if p == nil {
				continue
			}
			any = true
			for i, c := range p.counts {
				lo, hi := bucketRange(p.bounds, i)
				if i == len(p.bounds) {
					lo = math.Nextafter(hi, math.Inf(1))
					hi = lo
				}
				spreadLengths(dst, lo, hi, t.f*c)
			}
		}
	}
	if !any {
		return l
	}
	out := &snapshot.Lengths{Bounds: snapshot.LengthBounds, Prompt: make([]int, nb), Generation: make([]int, nb)}
	if l != nil {
		copy(out.Prompt, l.Prompt)
		copy(out.Generation, l.Generation)
	}
	for i := range nb {
		out.Prompt[i] += int(math.Round(prompt[i]))
		out.Generation[i] += int(math.Round(generation[i]))
	}
	return out
}

// spreadLengths adds c requests spread evenly over (lo, hi] (at hi when
// the range is empty) to the length buckets dst.
func spreadLengths(dst []float64, lo, hi, c float64) {
	if c <= 0 {
		return
	}
	if !(hi > lo) {
		dst[lengthBucketF(hi)] += c
		return
	}
	prev := lo
	for i := lengthBucketF(lo); i < len(dst) && prev < hi; i++ {
		top := hi
		if i < len(snapshot.LengthBounds) {
			top = min(hi, float64(snapshot.LengthBounds[i]))
		}
		if top > prev {
			dst[i] += c * (top - prev) / (hi - lo)
			prev = top
		}
	}
}

// lengthBucketF is the length bucket holding x (a bucket holds its bound).
func lengthBucketF(x float64) int {
	return sort.Search(len(snapshot.LengthBounds), func(i int) bool { return float64(snapshot.LengthBounds[i]) >= x })
}

// bucketRange is the range (lo, hi] of bucket i of bounds as
// histogram_quantile reads it: the first from 0 (or empty at its bound
// when that is not above 0), the one over every bound empty at the
// highest bound.
func bucketRange(bounds []float64, i int) (lo, hi float64) {
	switch {
	case i >= len(bounds):
		hi := bounds[len(bounds)-1]
		return hi, hi
	case i == 0 && bounds[0] <= 0:
		return bounds[0], bounds[0]
	case i == 0:
		return 0, bounds[0]
	}
	return bounds[i-1], bounds[i]
}

// weightedPart is a histogram counted at f of its counts and sum.
type weightedPart struct {
	p *hpart
	f float64
}

// mixedDistribution summarises the values sorted (observed, ascending) and
// the histograms parts as one distribution: the quantiles are read off the
// cumulative count of both, linear within each bucket (a bucket's values
// spread evenly over it, as histogram_quantile reads it; with histograms of
// one set of bounds only, each quantile is histogram_quantile's); the mean
// is the values' and the histograms' sums over their count; min and max are
// the lowest and highest value or bucket edge holding any. Nil when it
// holds nothing.
func mixedDistribution(sorted []float64, parts []weightedPart) *snapshot.Distribution {
	var c cdf
	c.build(sorted, parts)
	if !(c.n > 0) || len(c.knots) == 0 {
		return distribution(sorted)
	}
	sum, count := 0.0, float64(len(sorted))
	for _, v := range sorted {
		sum += v
	}
	for _, wp := range parts {
		sum += wp.f * wp.p.sum
		count += wp.f * wp.p.count()
	}
	return &snapshot.Distribution{
		Count: int(math.Round(count)),
		Mean:  sum / count,
		P50:   c.quantile(0.50),
		P95:   c.quantile(0.95),
		P99:   c.quantile(0.99),
		Max:   c.max(),
		Min:   c.min(),
		P1:    c.quantile(0.01),
		P5:    c.quantile(0.05),
	}
}

// cdf is a cumulative count: at each knot, all held at or below it
// (cum), of which lin came linearly over the range from the knot before
// (the rest sits on the knot itself).
type cdf struct {
	knots, cum, lin []float64
	n               float64
}

func (c *cdf) build(sorted []float64, parts []weightedPart) {
	type seg struct{ lo, hi, m float64 }
	var segs []seg
	atoms := map[float64]float64{}
	for _, v := range sorted {
		atoms[v]++
	}
	for _, wp := range parts {
		for i, n := range wp.p.counts {
			m := wp.f * n
			if !(m > 0) {
				continue
			}
			lo, hi := bucketRange(wp.p.bounds, i)
			if hi > lo {
				segs = append(segs, seg{lo, hi, m})
			} else {
				atoms[hi] += m
			}
		}
	}
	knots := make([]float64, 0, len(atoms)+2*len(segs))
	for v := range atoms {
		knots = append(knots, v)
	}
	for _, s := range segs {
		knots = append(knots, s.lo, s.hi)
	}
	slices.Sort(knots)
	knots = slices.Compact(knots)
	density := make([]float64, len(knots)+1) // differences: density[j] applies over (knots[j], knots[j+1]]
	for _, s := range segs {
		i, _ := slices.BinarySearch(knots, s.lo)
		j, _ := slices.BinarySearch(knots, s.hi)
		d := s.m / (s.hi - s.lo)
		density[i] += d
		density[j] -= d
	}
	c.knots, c.cum, c.lin = knots, make([]float64, len(knots)), make([]float64, len(knots))
	var run, d float64
	for j, k := range knots {
		if j > 0 {
			d += density[j-1]
			c.lin[j] = max(d, 0) * (k - knots[j-1])
		}
		run += c.lin[j] + atoms[k]
		c.cum[j] = run
	}
	c.n = run
}

// quantile is the least x whose cumulative count reaches q of all.
func (c *cdf) quantile(q float64) float64 {
	rank := q * c.n
	eps := 1e-9 * c.n
	j := sort.Search(len(c.cum), func(j int) bool { return c.cum[j] >= rank-eps && c.cum[j] > 0 })
	if j == len(c.cum) {
		j = len(c.cum) - 1
	}
	if j == 0 {
		return c.knots[0]
	}
	before := c.cum[j-1]
	if lin := c.lin[j]; lin > 0 && before+lin >= rank-eps {
		x := c.knots[j-1] + (c.knots[j]-c.knots[j-1])*max(rank-before, 0)/lin
		return min(x, c.knots[j])
	}
	return c.knots[j]
}

// min is the lowest value or bucket edge holding any count.
func (c *cdf) min() float64 {
	for j, v := range c.cum {
		if v > 0 {
			if c.lin[j] > 0 {
				return c.knots[j-1]
			}
			return c.knots[j]
		}
	}
	return c.knots[0]
}

// max is the highest knot the count grows at.
func (c *cdf) max() float64 {
	for j := len(c.cum) - 1; j > 0; j-- {
		if c.cum[j] > c.cum[j-1] {
			return c.knots[j]
		}
	}
	return c.knots[0]
}
