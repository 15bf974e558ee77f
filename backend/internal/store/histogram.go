package store

import (
	"math"

	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// A histogram counts values in log-linear bins: 16 bins an octave from
// 2^histMinExp ms up past events.MaxDurationMs, plus one bin below. A
// quantile is its bin's midpoint, within about 3 % of an observed value;
// that buys a fixed size and no allocation per value.
const (
	histMinExp  = -7 // 2^-7 ms: 7.8 µs
	histMaxExp  = 30 // 2^30 ms: past the 1e9 ms bound
	histSubBins = 16
	histBins    = (histMaxExp-histMinExp)*histSubBins + 1
)

type histogram struct {
	n    uint32
	bins [histBins]uint32
}

func histBin(v float64) int {
	if !(v >= math.Ldexp(1, histMinExp)) { // NaN too
		return 0
	}
	if v >= 1<<histMaxExp { // +Inf too, which Frexp gives as (+Inf, 0)
		return histBins - 1
	}
	frac, exp := math.Frexp(v) // v = frac × 2^exp, frac in [0.5, 1)
	octave := exp - 1 - histMinExp
	sub := int((frac*2 - 1) * histSubBins)
	return 1 + octave*histSubBins + sub
}

// histValue is bin i's midpoint.
func histValue(i int) float64 {
	if i == 0 {
		return 0
	}
	octave, sub := (i-1)/histSubBins, (i-1)%histSubBins
	return math.Ldexp(1+(float64(sub)+0.5)/histSubBins, octave+histMinExp)
}

func (h *histogram) add(v float64) {
	h.n++
	h.bins[histBin(v)]++
}

// histLower is bin i's lowest value (bin 0 holds everything below bin 1).
func histLower(i int) float64 {
	if i == 0 {
		return math.Inf(-1)
	}
	octave, sub := (i-1)/histSubBins, (i-1)%histSubBins
	return math.Ldexp(1+float64(sub)/histSubBins, octave+histMinExp)
}

// addN adds c values v.
func (h *histogram) addN(v float64, c int64) {
	c = min(c, int64(math.MaxUint32-h.n))
	if c <= 0 {
		return
	}
	h.n += uint32(c)
	h.bins[histBin(v)] += uint32(c)
}

// addRange adds c values spread evenly over (lo, hi], the k-th of them
// (from 1) at lo + (hi-lo)k/c, so that the k-th of them is where
// histogram_quantile reads the rank k of a Prometheus bucket; all c at hi
// when the range is empty. It costs a step a bin the range spans, not a
// step a value.
func (h *histogram) addRange(lo, hi float64, c int64) {
	c = min(c, int64(math.MaxUint32-h.n))
	if c <= 0 {
		return
	}
	if !(hi > lo) {
		h.addN(hi, c)
		return
	}
	// below is how many of the c values lie below x.
	below := func(x float64) int64 {
		k := math.Ceil((x-lo)/(hi-lo)*float64(c)) - 1
		return int64(min(max(k, 0), float64(c)))
	}
	first, last := histBin(lo), histBin(hi)
	for i := first; i <= last; i++ {
		from, to := int64(0), c
		if i > first {
			from = below(histLower(i))
		}
		if i < last {
			to = below(histLower(i + 1))
		}
		h.bins[i] += uint32(to - from)
	}
	h.n += uint32(c)
}

func (h *histogram) reset() { *h = histogram{} }

// merge adds o's values to h.
func (h *histogram) merge(o *histogram) {
	if o.n == 0 {
		return
	}
	h.n += o.n
	for i, c := range o.bins {
		h.bins[i] += c
	}
}

// quantiles are nearest-rank p50, p95 and p99; nil when empty.
func (h *histogram) quantiles() *snapshot.Quantiles {
	if h.n == 0 {
		return nil
	}
	var q snapshot.Quantiles
	targets := [3]struct {
		rank uint32
		dst  *float64
	}{{rank(h.n, 0.50), &q.P50}, {rank(h.n, 0.95), &q.P95}, {rank(h.n, 0.99), &q.P99}}
	var seen uint32
	t := 0
	for i, c := range h.bins {
		seen += c
		for t < len(targets) && seen >= targets[t].rank {
			*targets[t].dst = histValue(i)
			t++
		}
		if t == len(targets) {
			break
		}
	}
	return &q
}

func rank(n uint32, q float64) uint32 {
	r := uint32(math.Ceil(q * float64(n)))
	return max(r, 1)
}
