package store

import (
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// promQuantile is Prometheus' histogram_quantile over one histogram's
// cumulative buckets, as its documentation states the rule: the rank q×n
// falls in the first bucket whose cumulative count reaches it, and is
// interpolated linearly within it (the first bucket from 0 when its bound
// is above 0, else its bound); in the bucket over every bound it is the
// highest bound. Written apart from the store's cumulative walk, to check
// one against the other.
func promQuantile(q float64, bounds []float64, counts []float64) float64 {
	cum := make([]float64, len(counts))
	run := 0.0
	for i, c := range counts {
		run += c
		cum[i] = run
	}
	rank := q * run
	b := sort.Search(len(bounds), func(i int) bool { return cum[i] >= rank })
	if b == len(bounds) {
		return bounds[len(bounds)-1]
	}
	if b == 0 && bounds[0] <= 0 {
		return bounds[0]
	}
	start, end, count := 0.0, bounds[b], cum[b]
	if b > 0 {
		start = bounds[b-1]
		count -= cum[b-1]
		rank -= cum[b-1]
	}
	return start + (end-start)*(rank/count)
}

func hist(bounds []float64, counts ...int64) *events.Histogram {
	h := &events.Histogram{Bounds: bounds, Counts: counts}
	for i, c := range counts {
		lo, hi := bucketRange(bounds, i)
		h.Sum += float64(c) * (lo + hi) / 2
	}
	return h
}

// vLLM's TTFT bounds in ms, and its request-phase bounds.
var (
	ttftBounds  = []float64{1, 5, 10, 20, 40, 60, 80, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000, 20000, 40000, 80000, 160000, 640000, 2560000}
	phaseBounds = []float64{300, 500, 800, 1000, 1500, 2000, 2500, 5000, 10000, 15000, 20000, 30000, 40000, 50000, 60000, 120000, 240000, 480000, 960000, 1920000, 7680000}
)

func TestScrapedQuantileIsHistogramQuantile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		bounds []float64
		counts []int64
		q      float64
		want   float64
	}{
		{"within a bucket", []float64{100, 200, 400}, []int64{10, 20, 10, 0}, 0.5, 100 + 100*10.0/20},
		{"first bucket starts at 0", []float64{100, 200}, []int64{10, 10, 0}, 0.25, 50},
		{"over every bound: the highest bound", []float64{100, 200}, []int64{1, 1, 8}, 0.99, 200},
		{"a bound at 0 holds its values at 0", []float64{0, 100, 200}, []int64{5, 5, 0, 0}, 0.3, 0},
		{"empty buckets between", []float64{10, 20, 30, 40}, []int64{2, 0, 0, 2, 0}, 0.5, 10},
		{"rank on a bucket's top", []float64{10, 20, 30}, []int64{5, 5, 0, 0}, 0.5, 10},
		{"p99 of vLLM's TTFT buckets", ttftBounds, []int64{0, 4, 20, 60, 30, 10, 6, 3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 0.99, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hist(tc.bounds, tc.counts...)
			want := tc.want
			fc := make([]float64, len(tc.counts))
			for i, c := range tc.counts {
				fc[i] = float64(c)
			}
			if want < 0 {
				want = promQuantile(tc.q, tc.bounds, fc)
			} else if p := promQuantile(tc.q, tc.bounds, fc); math.Abs(p-want) > 1e-9 {
				t.Fatalf("the reference reads %g, the case says %g", p, want)
			}
			var c cdf
			c.build(nil, []weightedPart{{newPart(h), 1}})
			if got := c.quantile(tc.q); math.Abs(got-want) > 1e-9*math.Max(1, want) {
				t.Errorf("quantile(%g) = %g, histogram_quantile %g", tc.q, got, want)
			}
		})
	}
	// And over random histograms of vLLM's bounds, every quantile the
	// snapshot shows.
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 500 {
		bounds := [][]float64{ttftBounds, phaseBounds, {0, 0.1, 0.2, 0.5, 1}}[n%3]
		counts := make([]int64, len(bounds)+1)
		fc := make([]float64, len(counts))
		for i := range counts {
			if r.IntN(3) == 0 {
				counts[i] = int64(r.IntN(50))
				fc[i] = float64(counts[i])
			}
		}
		h := &events.Histogram{Bounds: bounds, Counts: counts}
		p := newPart(h)
		if p == nil {
			continue
		}
		var c cdf
		c.build(nil, []weightedPart{{p, 1}})
		for _, q := range []float64{0.01, 0.05, 0.5, 0.95, 0.99} {
			want := promQuantile(q, bounds, fc)
			if got := c.quantile(q); math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Fatalf("counts %v q %g: %g, histogram_quantile %g", counts, q, got, want)
			}
		}
	}
}

// With values only, the walk is the nearest rank the window reports.
func TestMixedDistributionOfValuesIsNearestRank(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		vals := make([]float64, 1+r.IntN(300))
		for i := range vals {
			vals[i] = float64(r.IntN(1000))
		}
		sort.Float64s(vals)
		want := distribution(vals)
		var c cdf
		c.build(vals, nil)
		for _, x := range []struct {
			q    float64
			want float64
		}{{0.5, want.P50}, {0.95, want.P95}, {0.99, want.P99}, {0.01, want.P1}, {0.05, want.P5}} {
			if got := c.quantile(x.q); got != x.want {
				t.Fatalf("%d values q %g: %g, nearest rank %g", len(vals), x.q, got, x.want)
			}
		}
		if c.min() != want.Min || c.max() != want.Max {
			t.Fatalf("min %g max %g, want %g %g", c.min(), c.max(), want.Min, want.Max)
		}
	}
}

func reqSample(at int64, model string, finished int64, ttft *events.Histogram) events.Event {
	return events.Event{Type: events.TypeRequestsSample, At: at, Payload: &events.RequestsSample{
		Model: model, IntervalMs: 2000, Finished: finished, ByFinish: events.FinishTotalsByReason{Stop: finished},
		PromptTokens: 100 * finished, GenerationTokens: 10 * finished, CachedPromptTokens: i64(25 * finished),
		TTFTMs: ttft, TotalMs: hist([]float64{1000, 2000}, 0, finished, 0)}}
}

// A scraped engine's polls are its model's window: the last Window
// requests, the oldest poll pro-rated, read off the buckets; the totals,
// reasons and timeline count them; no request is listed as recent.
func TestScrapedWindow(t *testing.T) {
	bounds := []float64{100, 200, 400}
	s := New(t0, Options{Window: 10})
	// Oldest first: 8 requests at 300-400 ms, then 4 at 100-200 ms.
	s.Apply(reqSample(t0+1000, "m", 8, hist(bounds, 0, 0, 8, 0)))
	s.Apply(reqSample(t0+6000, "m", 4, hist(bounds, 0, 4, 0, 0))) // the next interval
	snap := s.Snapshot(t0 + 7000)
	r := snap.Requests
	if r.Finished != 12 || r.ByFinish[events.FinishStop] != 12 || len(r.Recent) != 0 {
		t.Fatalf("finished %d, by finish %v, %d recent", r.Finished, r.ByFinish, len(r.Recent))
	}
	w := r.Window
	if w.Size != 10 || w.Count != 10 {
		t.Fatalf("window %d of %d, want 10 of 10", w.Count, w.Size)
	}
	// 4 newest at 100-200 ms, then 6 of the 8 (pro-rated) at 200-400 ms:
	// the 5th of 10 is in the second bucket, 1/6 into it.
	ttft := w.TTFTMs
	if ttft == nil || ttft.Count != 10 || math.Abs(ttft.P50-(200+200*1.0/6)) > 1e-9 || ttft.Min != 100 || ttft.Max != 400 {
		t.Fatalf("ttft %+v", ttft)
	}
	if want := (4*150 + 6*300) / 10.0; math.Abs(ttft.Mean-want) > 1e-9 {
		t.Errorf("mean %g, want %g", ttft.Mean, want)
	}
	if w.CachedPromptShare == nil || math.Abs(*w.CachedPromptShare-0.25) > 1e-9 {
		t.Errorf("cached share %v", w.CachedPromptShare)
	}
	if w.PrefillTokensPerSecond != nil || w.QueueMs != nil {
		t.Errorf("rates or queue from no histogram: %+v %+v", w.PrefillTokensPerSecond, w.QueueMs)
	}
	if pm := w.PerModel["m"]; pm == nil || !reflect.DeepEqual(*pm, withoutPerModel(w)) {
		t.Errorf("per model %+v", pm)
	}
	var reqs, prompt int64
	for _, p := range snap.Timeline {
		reqs += int64(p.Requests)
		prompt += p.PromptTokens
	}
	if reqs != 12 || prompt != 1200 {
		t.Errorf("timeline: %d requests, %d prompt tokens", reqs, prompt)
	}
	// The second poll's interval: its TTFT quantiles within the 3 % the
	// timeline's bins allow of histogram_quantile over its one bucket.
	last := snap.Timeline[len(snap.Timeline)-1]
	if last.TTFTMs == nil || math.Abs(last.TTFTMs.P50-150)/150 > 0.03 {
		t.Errorf("timeline ttft %+v, want p50 near 150", last.TTFTMs)
	}
}

func withoutPerModel(w snapshot.Window) snapshot.Window {
	w.PerModel = nil
	return w
}

// Reported requests and scraped ones share a window: counted together,
// their distribution over the values and the buckets together.
func TestScrapedWithReported(t *testing.T) {
	s := New(t0, Options{Window: 10})
	for i := range 4 {
		s.Apply(request(t0+int64(i), "host-model", events.FinishStop, 1000, f(50)))
	}
	s.Apply(reqSample(t0+10, "scraped-model", 4, hist([]float64{100, 200}, 0, 4, 0)))
	w := s.Snapshot(t0 + 20).Requests.Window
	if w.Count != 8 || w.TTFTMs.Count != 8 {
		t.Fatalf("count %d, ttft %+v", w.Count, w.TTFTMs)
	}
	// 4 at 50 ms, 4 spread over 100-200: the median is the 4th value's 50
	// (nearest rank: 4 of 8 at or below it).
	if w.TTFTMs.P50 != 50 || w.TTFTMs.Min != 50 || w.TTFTMs.Max != 200 {
		t.Errorf("ttft %+v", w.TTFTMs)
	}
	if w.PerModel["host-model"].Count != 4 || w.PerModel["scraped-model"].Count != 4 {
		t.Errorf("per model %+v", w.PerModel)
	}
}

// Length histograms of vLLM's 1-2-5 bounds land in the same buckets.
func TestScrapedLengths(t *testing.T) {
	s := New(t0, Options{})
	p := reqSample(t0, "m", 5, nil)
	p.Payload.(*events.RequestsSample).PromptLengths = hist([]float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000},
		0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 1, 1)
	s.Apply(p)
	l := s.Snapshot(t0).Requests.Window.Lengths
	if l == nil {
		t.Fatal("no lengths")
	}
	want := make([]int, len(snapshot.LengthBounds)+1)
	want[6], want[7], want[10], want[11] = 1, 2, 1, 1 // the one over 2000 in 2000-5000
	if !reflect.DeepEqual(l.Prompt, want) {
		t.Errorf("prompt lengths %v, want %v", l.Prompt, want)
	}
}

// A window keeps enough chunks to cover itself, however the polls come.
func TestScrapedWindowBounded(t *testing.T) {
	w := newScrapedWindow(200)
	for i := range 10_000 {
		n := int64(i % 7)
		w.add(t0+int64(i), reqSample(t0, "m", n, hist([]float64{10}, n, 0)).Payload.(*events.RequestsSample))
		if len(w.chunks) > maxChunks {
			t.Fatalf("%d chunks", len(w.chunks))
		}
	}
	_, n := take(200, w)
	if n != 200 {
		t.Fatalf("covers %g requests, want 200", n)
	}
}

func TestHistogramAddRange(t *testing.T) {
	var h histogram
	h.addRange(100, 200, 1000)
	if h.n != 1000 {
		t.Fatalf("n %d", h.n)
	}
	var sum uint32
	for _, c := range h.bins {
		sum += c
	}
	if sum != 1000 {
		t.Fatalf("bins hold %d", sum)
	}
	q := h.quantiles()
	if math.Abs(q.P50-150)/150 > 0.03 || math.Abs(q.P99-199)/199 > 0.03 || q.P99 > 200*1.03 {
		t.Errorf("quantiles %+v", q)
	}
	h.addRange(5, 5, 10) // an empty range: all at its bound
	if h.n != 1010 || h.bins[histBin(5)] != 10 {
		t.Errorf("n %d, bin %d", h.n, h.bins[histBin(5)])
	}
}
