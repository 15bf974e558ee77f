package bench

import (
	"math"
	"math/rand/v2"
	"sort"
)

// MaxDistValues bounds the values a Collector keeps (8 MiB): past it the
// percentiles are over a uniform sample of them. An hour at 100 requests/s
// of 100 tokens each is 36 million gaps between tokens.
const MaxDistValues = 1 << 20

// Percentile is the p-th percentile (0..100) of sorted values by linear
// interpolation between the closest ranks, numpy's default rule and so
// vLLM's, GuideLLM's and AIPerf's. 0 for no values. The project's one
// rule for percentiles of exact values, of float64s or of durations
// (time.Duration(Percentile(ds, 99)) for a p99 in time).
func Percentile[T ~float64 | ~int64](sorted []T, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := p / 100 * float64(n-1)
	lo := int(math.Floor(rank))
	if lo >= n-1 {
		return float64(sorted[n-1])
	}
	if lo < 0 {
		return float64(sorted[0])
	}
	frac := rank - float64(lo)
	return float64(sorted[lo]) + frac*(float64(sorted[lo+1])-float64(sorted[lo]))
}

// Collector gathers one figure's values for a Dist: the mean and the
// standard deviation over all of them (Welford), the percentiles over the
// values kept (all up to MaxDistValues, then a reservoir sample).
type Collector struct {
	n        int
	mean, m2 float64
	kept     []float64
	rng      *rand.Rand
	limit    int
}

// NewCollector keeps up to limit values (MaxDistValues when 0); seed makes
// the sample past it reproducible.
func NewCollector(limit int, seed uint64) *Collector {
	if limit <= 0 {
		limit = MaxDistValues
	}
	return &Collector{limit: limit, rng: rand.New(rand.NewPCG(seed, 0x5eed))}
}

// Add takes one value; NaN and infinities are not values.
func (c *Collector) Add(v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	c.n++
	d := v - c.mean
	c.mean += d / float64(c.n)
	c.m2 += d * (v - c.mean)
	if len(c.kept) < c.limit {
		c.kept = append(c.kept, v)
		return
	}
	if j := c.rng.IntN(c.n); j < c.limit {
		c.kept[j] = v
	}
}

// Count is the values added.
func (c *Collector) Count() int { return c.n }

// Dist summarises the values; std is the population's (numpy's default).
func (c *Collector) Dist() Dist {
	if c.n == 0 {
		return Dist{}
	}
	s := append([]float64(nil), c.kept...)
	sort.Float64s(s)
	return Dist{
		Count: c.n, Mean: c.mean, Std: math.Sqrt(c.m2 / float64(c.n)),
		Median: Percentile(s, 50), P90: Percentile(s, 90), P95: Percentile(s, 95),
		P99: Percentile(s, 99), P999: Percentile(s, 99.9),
		Sampled: c.n > len(c.kept),
	}
}

// Spread is the greatest over the least of the positive values (the
// runner's rule for a phase's runs: past the plan's UnstableSpread a cell
// is unstable); 0 when none is positive.
func Spread(vs []float64) float64 {
	lo, hi := 0.0, 0.0
	for _, v := range vs {
		if v <= 0 {
			continue
		}
		if lo == 0 || v < lo {
			lo = v
		}
		hi = max(hi, v)
	}
	if lo == 0 {
		return 0
	}
	return hi / lo
}
