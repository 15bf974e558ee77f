package store

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// Every value lands in a bin whose midpoint is within 3.2 % of it.
func TestHistogramBins(t *testing.T) {
	for _, v := range []float64{0.01, 0.5, 1, 1.5, 7.9, 88.1, 120, 1000, 1154, 65_432.1, 1e6, 9.99e8} {
		got := histValue(histBin(v))
		if rel := math.Abs(got-v) / v; rel > 0.032 {
			t.Errorf("%v lands at %v (%.1f %% off)", v, got, 100*rel)
		}
	}
	for _, v := range []float64{0, 1e-9, math.NaN()} {
		if histBin(v) != 0 {
			t.Errorf("%v not in the lowest bin", v)
		}
	}
	if histBin(math.Inf(1)) != histBins-1 { // Frexp(+Inf) is (+Inf, 0): no bin of its own
		t.Errorf("histBin(+Inf) = %d, want the top bin", histBin(math.Inf(1)))
	}
	if histBin(2e9) != histBins-1 {
		t.Error("values past the range are not in the top bin")
	}
}

func TestHistogramQuantiles(t *testing.T) {
	for _, tc := range []struct {
		name          string
		values        []float64
		p50, p95, p99 float64 // the observed nearest-rank values
	}{
		{"one", []float64{100}, 100, 100, 100},
		{"two", []float64{88.1, 120}, 88.1, 120, 120},
		{"1..100", seq(1, 100), 50, 95, 99},
		{"a long tail", append(repeat(10, 10), 5000), 10, 5000, 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h histogram
			for _, v := range tc.values {
				h.add(v)
			}
			q := h.quantiles()
			for _, c := range []struct{ got, want float64 }{{q.P50, tc.p50}, {q.P95, tc.p95}, {q.P99, tc.p99}} {
				if math.Abs(c.got-c.want)/c.want > 0.032 {
					t.Errorf("quantiles %+v, want about %v %v %v", q, tc.p50, tc.p95, tc.p99)
				}
			}
		})
	}
	var empty histogram
	if empty.quantiles() != nil {
		t.Error("an empty histogram has quantiles")
	}
}

func seq(from float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = from + float64(i)
	}
	return out
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func reqFull(at int64, finish events.FinishReason, ttft, decode *float64, total float64) events.Event {
	return events.Event{Type: events.TypeRequestFinished, At: at, Payload: &events.RequestFinished{
		Model: "a", RequestID: "r", Finish: finish, PromptTokens: 10, CompletionTokens: 5,
		TTFTMs: ttft, DecodeTokensPerSecond: decode, TotalMs: total}}
}

func kvSample(at int64, model string, bytes, capacity int64) events.Event {
	return events.Event{Type: events.TypeCacheSample, At: at, Payload: &events.CacheSample{Model: model, Cache: events.CacheKV, Bytes: bytes, CapacityBytes: &capacity}}
}

// The timeline keeps fixed intervals: each request's timings and finish
// reason in the interval it finished in, the KV use and the prefix hit rate
// of the lookups made in it, and model marks.
func TestTimeline(t *testing.T) {
	const w = DefaultIntervalMs
	base := (t0 / w) * w
	evs := []events.Event{
		load(base, "a", events.PhaseFinished, f(1500)),
		reqFull(base+100, events.FinishStop, f(80), f(50), 1000), // tpot 20 ms
		reqFull(base+200, events.FinishLength, f(120), f(25), 3000),
		reqFull(base+300, events.FinishCancelled, nil, nil, 10),
		kvSample(base+400, "a", 250, 1000),
		cache(base+400, "a", events.CachePrefix, 1, i64(10), i64(10)),
		// Two intervals later: nothing in between.
		reqFull(base+2*w+1, events.FinishError, f(5), nil, 5),
		kvSample(base+2*w+2, "a", 500, 1000),
		cache(base+2*w+2, "a", events.CachePrefix, 1, i64(13), i64(11)), // 3 hits of 4 lookups here
		unload(base+2*w+3, "a", events.ReasonIdle, 5, nil),
	}
	s := New(t0, Options{})
	for _, ev := range evs {
		s.Apply(ev)
	}
	snap := s.Snapshot(t0)
	if snap.IntervalMs != w || len(snap.Timeline) != 3 {
		t.Fatalf("interval %d, %d points: %+v", snap.IntervalMs, len(snap.Timeline), snap.Timeline)
	}
	p0, gap, p2 := snap.Timeline[0], snap.Timeline[1], snap.Timeline[2]
	checks := []struct {
		name      string
		got, want any
	}{
		{"first at", p0.At, base},
		{"requests", p0.Requests, 3},
		{"by finish", p0.ByFinish, snapshot.FinishCounts{Stop: 1, Length: 1, Cancelled: 1}},
		{"ttft p50 (nulls skipped)", near(p0.TTFTMs.P50, 80), true},
		{"ttft p95", near(p0.TTFTMs.P95, 120), true},
		{"tpot p50", near(p0.TPOTMs.P50, 20), true},
		{"total p99", near(p0.TotalMs.P99, 3000), true},
		{"kv usage", *p0.KVUsage, 0.25},
		{"prefix hit rate (no lookups before)", *p0.PrefixHitRate, 0.5},
		{"the empty interval is there", gap.At, base + w},
		{"and empty", gap.Requests == 0 && gap.TTFTMs == nil && gap.KVUsage == nil, true},
		{"later interval", p2.ByFinish.Error, 1},
		{"later tpot null", p2.TPOTMs, (*snapshot.Quantiles)(nil)},
		{"later kv", *p2.KVUsage, 0.5},
		{"prompt tokens of the interval", p0.PromptTokens, int64(30)},
		{"generation tokens of the interval", p0.GenerationTokens, int64(15)},
		{"decode time p95 (total less TTFT)", near(p0.DecodeMs.P95, 2880), true},
		{"no queue time reported, none shown", p0.QueueMs, (*snapshot.Quantiles)(nil)},
		{"nor prefill time", p0.PrefillMs, (*snapshot.Quantiles)(nil)},
		{"hit rate of this interval's lookups", *p2.PrefixHitRate, 0.75},
		{"marks", len(snap.Marks), 2},
		{"load mark", snap.Marks[0], snapshot.ModelMark{At: base, Model: "a", Kind: snapshot.MarkLoad, Ms: f(1500)}},
		{"unload mark", snap.Marks[1].Kind, snapshot.MarkUnload},
		{"window tpot", near(snap.Requests.Window.TPOTMs.P50, 20), true},
	}
	for _, c := range checks {
		if !equalish(c.got, c.want) {
			t.Errorf("%s = %+v, want %+v", c.name, c.got, c.want)
		}
	}

	// Far later, the ring forgets the old intervals; older events are dropped.
	s.Apply(reqFull(base+1000*w, events.FinishStop, f(1), nil, 1))
	s.Apply(reqFull(base+w, events.FinishStop, f(1), nil, 1))
	if tl := s.Snapshot(t0).Timeline; len(tl) != 1 || tl[0].At != base+1000*w || tl[0].Requests != 1 {
		t.Errorf("after a long gap: %+v", tl)
	}
}

func near(got, want float64) bool { return math.Abs(got-want)/want <= 0.032 }

func equalish(a, b any) bool {
	switch x := a.(type) {
	case snapshot.ModelMark:
		y := b.(snapshot.ModelMark)
		return x.At == y.At && x.Model == y.Model && x.Kind == y.Kind && deref(x.Ms) == deref(y.Ms)
	}
	return a == b
}

// Queue and prefill time (TTFT less the queue) per interval, where the
// host reports the queue; the window's request lengths by bucket.
func TestTimelinePhasesAndLengths(t *testing.T) {
	const w = DefaultIntervalMs
	base := (t0 / w) * w
	s := New(t0, Options{})
	s.Apply(load(base, "a", events.PhaseFinished, f(1)))
	for i, prompt := range []int64{1, 150, 150, 3000} {
		s.Apply(events.Event{Type: events.TypeRequestFinished, At: base + 10 + int64(i), Payload: &events.RequestFinished{
			Model: "a", RequestID: "r", Finish: events.FinishStop, PromptTokens: prompt, CompletionTokens: 64,
			QueueMs: f(10), TTFTMs: f(110), TotalMs: 1110}})
	}
	snap := s.Snapshot(t0)
	p := snap.Timeline[0]
	if !near(p.QueueMs.P50, 10) || !near(p.PrefillMs.P50, 100) || !near(p.DecodeMs.P99, 1000) {
		t.Errorf("queue %+v prefill %+v decode %+v", p.QueueMs, p.PrefillMs, p.DecodeMs)
	}
	l := snap.Requests.Window.Lengths
	// Buckets: ≤1, ≤2, ≤5, ≤10, ≤20, ≤50, ≤100, ≤200, ≤500, ≤1000, ≤2000, ≤5000…
	if l == nil || l.Prompt[0] != 1 || l.Prompt[7] != 2 || l.Prompt[11] != 1 || l.Generation[6] != 4 ||
		len(l.Prompt) != len(l.Bounds)+1 {
		t.Errorf("lengths %+v", l)
	}
}

// Each point carries the minute that ends with its interval: the requests
// of its twelve intervals and their merged quantiles (a p99 where each
// interval holds too few requests for one), and the prefix hits over the
// lookups made in it; and the interval's scheduler: the mean of the
// models' summed tokens/s at each sample, the rows and queue as of the
// last.
func TestTimelineMinuteAndScheduler(t *testing.T) {
	const w = DefaultIntervalMs
	base := (t0 / w) * w
	s := New(t0, Options{})
	s.Apply(load(base, "a", events.PhaseFinished, f(1)))
	s.Apply(load(base, "b", events.PhaseFinished, f(1)))
	// 15 intervals of 5 requests each, TTFT 100 ms but one slow request of
	// 900 ms in the second; a lookup of 10 prompt tokens per interval, all
	// hits from the eighth on.
	var hits, misses int64
	for i := range int64(15) {
		for r := range int64(5) {
			ttft := 100.0
			if i == 1 && r == 2 {
				ttft = 900
			}
			s.Apply(reqFull(base+i*w+10+r, events.FinishStop, f(ttft), f(50), 1000))
		}
		if i >= 7 {
			hits += 10
		} else {
			misses += 10
		}
		s.Apply(cache(base+i*w+100, "a", events.CachePrefix, 1, i64(hits), i64(misses)))
	}
	// Interval 14's scheduler: a at 100 then 300 tok/s, b at 50 between.
	s.Apply(sched(base+14*w+200, "a", 2, 0, 100))
	s.Apply(sched(base+14*w+300, "b", 1, 3, 50))
	s.Apply(sched(base+14*w+400, "a", 4, 1, 300))
	tl := s.Snapshot(t0).Timeline
	if len(tl) != 15 {
		t.Fatalf("%d points", len(tl))
	}
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"first point's minute: itself", tl[0].Minute.Requests, 5},
		{"fifth: five intervals", tl[4].Minute.Requests, 25},
		{"twelfth on: twelve intervals", tl[11].Minute.Requests, 60},
		{"last: twelve intervals", tl[14].Minute.Requests, 60},
		{"an interval's own p99 is its slowest of five", near(tl[1].TTFTMs.P99, 900), true},
		{"the minute's p99 of 25 is its slowest too", near(tl[4].Minute.TTFTMs.P99, 900), true},
		{"its p50", near(tl[4].Minute.TTFTMs.P50, 100), true},
		{"a minute of 60 with the slow one: its p99 (the 60th)", near(tl[12].Minute.TTFTMs.P99, 900), true},
		{"but not its p95 (the 57th)", near(tl[12].Minute.TTFTMs.P95, 100), true},
		{"the minute past the slow interval", near(tl[13].Minute.TTFTMs.P99, 100), true},
		{"tpot merged too", near(tl[14].Minute.TPOTMs.P50, 20), true},
		{"queue not reported: null", tl[14].Minute.QueueMs, (*snapshot.Quantiles)(nil)},
		// The first sample's lookups count from zero: 10 misses.
		{"prefix, first minute: no hits", *tl[0].Minute.PrefixHitRate, 0.0},
		{"prefix at the eighth: 10 hits of 80 lookups", *tl[7].Minute.PrefixHitRate, 10.0 / 80},
		{"prefix at the last: 8 of 12 intervals all hits", *tl[14].Minute.PrefixHitRate, 80.0 / 120},
		{"the interval's own rate", *tl[14].PrefixHitRate, 1.0},
		{"no scheduler sample: null", tl[13].Scheduler, (*snapshot.IntervalScheduler)(nil)},
		// Sums as sampled: a 100; a 100 + b 50; a 300 + b 50.
		{"scheduler samples", tl[14].Scheduler.Samples, 3},
		{"scheduler tokens/s mean of the sums", tl[14].Scheduler.TokensPerSecond, (100.0 + 150 + 350) / 3},
		{"rows as of the last sample", tl[14].Scheduler.Active, 5},
		{"capacity as of the last sample", tl[14].Scheduler.Capacity, 16},
		{"queue as of the last sample", tl[14].Scheduler.Queued, 4},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// The minutes do not depend on when snapshots were taken: one recorded
// stream gives the same timeline snapshotted after every event as only at
// its end, as the ring goes round and old intervals leave the minutes.
func TestTimelineMinuteIndependentOfSnapshots(t *testing.T) {
	const w = DefaultIntervalMs
	base := (t0 / w) * w
	var evs []events.Event
	evs = append(evs, load(base, "a", events.PhaseFinished, f(1)))
	var hits int64
	for i := range int64(3 * DefaultTimeline / 2) {
		if i%7 == 3 {
			continue // a quiet interval
		}
		evs = append(evs, reqFull(base+i*w+1, events.FinishStop, f(float64(10+i%13)), f(40), float64(100+i)))
		hits += i % 3
		evs = append(evs, cache(base+i*w+2, "a", events.CachePrefix, 1, i64(hits), i64(i)))
		evs = append(evs, sched(base+i*w+3, "a", int(i%4), 0, float64(i)))
		if i%5 == 0 { // late: into the interval before
			evs = append(evs, reqFull(base+i*w-w+4, events.FinishLength, f(7), nil, 9))
		}
	}
	every, once := New(t0, Options{}), New(t0, Options{})
	for _, ev := range evs {
		every.Apply(ev)
		_ = every.Snapshot(t0)
		once.Apply(ev)
	}
	a, _ := json.Marshal(every.Snapshot(t0).Timeline)
	b, _ := json.Marshal(once.Snapshot(t0).Timeline)
	if !bytes.Equal(a, b) {
		t.Fatalf("snapshotted after every event:\n%s\nonly at the end:\n%s", a, b)
	}
}
