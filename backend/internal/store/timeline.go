package store

import (
	"math"

	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// timeline is the last n intervals of fixed width, a ring indexed by
// interval number (at / width). Only the intervals an event touched since
// the last snapshot are summarised again.
type timeline struct {
	width  int64
	slots  []interval
	newest int64 // the newest interval's number; -1 before any
	marks  ring[snapshot.ModelMark]

	// The caches' running sums over resident models, sampled into the
	// interval of each cache sample.
	prefixHits, prefixLookups int64

	// perMinute is how many intervals a point's minute spans; scratch holds
	// the merged ttft, tpot, total and queue histograms of one minute.
	perMinute int64
	scratch   [4]histogram
}

type interval struct {
	num      int64 // at / width; -1 when unused
	requests int
	byFinish snapshot.FinishCounts
	// Allocated once, on the slot's first request.
	ttft, tpot, total, queue, prefill, decode *histogram
	promptTokens, generationTokens            int64
	kvUsage                                   float64
	kvSampled                                 bool
	// The running prefix totals where they stood before the interval's
	// first sample, and at its last one: their difference is its lookups.
	startHits, startLookups int64
	endHits, endLookups     int64
	prefixSampled           bool
	// The scheduler: samples, the sum of their summed tokens/s, and the
	// rows and queue as of the last.
	schedSamples                  int
	schedTPS                      float64
	schedActive, schedCap, schedQ int

	dirty bool
	view  snapshot.TimelinePoint
	// minute is the view's Minute, over the intervals from minuteFrom on;
	// computed again when one of them changed or the oldest interval kept
	// moved into the minute.
	minute     *snapshot.Minute
	minuteFrom int64
}

const maxMarks = 64

func newTimeline(n int, width int64) *timeline {
	t := &timeline{width: width, slots: make([]interval, n), newest: -1, marks: newRing[snapshot.ModelMark](maxMarks),
		perMinute: max(1, snapshot.MinuteMs/width)}
	for i := range t.slots {
		t.slots[i].num = -1
	}
	return t
}

// slot returns the interval at falls in, starting it (and forgetting what
// the ring held there) when it is newer than any; nil when it is older
// than the ring holds.
func (t *timeline) slot(at int64) *interval {
	num := at / t.width
	if t.newest >= 0 && num <= t.newest-int64(len(t.slots)) {
		return nil
	}
	s := &t.slots[num%int64(len(t.slots))]
	if s.num != num {
		ttft, tpot, total, queue, prefill, decode := s.ttft, s.tpot, s.total, s.queue, s.prefill, s.decode
		*s = interval{num: num, ttft: ttft, tpot: tpot, total: total, queue: queue, prefill: prefill, decode: decode}
		for _, h := range []*histogram{ttft, tpot, total, queue, prefill, decode} {
			if h != nil {
				h.reset()
			}
		}
	}
	t.newest = max(t.newest, num)
	s.dirty = true
	return s
}

func (t *timeline) addRequest(at int64, r *requestRecord, finish events.FinishReason) {
	s := t.slot(at)
	if s == nil {
		return
	}
	s.requests++
	switch finish {
	case events.FinishStop:
		s.byFinish.Stop++
	case events.FinishLength:
		s.byFinish.Length++
	case events.FinishCancelled:
		s.byFinish.Cancelled++
	case events.FinishError:
		s.byFinish.Error++
	}
	if s.total == nil {
		s.ttft, s.tpot, s.total = new(histogram), new(histogram), new(histogram)
		s.queue, s.prefill, s.decode = new(histogram), new(histogram), new(histogram)
	}
	s.promptTokens += max(r.promptTokens, 0)
	s.generationTokens += max(r.completionTokens, 0)
	s.total.add(r.totalMs)
	hasQueue, hasTTFT := r.queueMs == r.queueMs, r.ttftMs == r.ttftMs // not null
	if hasTTFT {
		s.ttft.add(r.ttftMs)
		s.decode.add(max(r.totalMs-r.ttftMs, 0))
	}
	if hasQueue {
		s.queue.add(r.queueMs)
		if hasTTFT {
			s.prefill.add(max(r.ttftMs-r.queueMs, 0))
		}
	}
	if r.tpotMs == r.tpotMs {
		s.tpot.add(r.tpotMs)
	}
}

// addRequests counts a scraped engine's requests in the interval at falls
// in: its finished requests and reasons, its tokens, and its histograms'
// bucket increases into the interval's quantiles, each bucket's values
// spread evenly over it (see histogram.addRange).
func (t *timeline) addRequests(at int64, p *events.RequestsSample) {
	s := t.slot(at)
	if s == nil {
		return
	}
	s.requests += int(min(p.Finished, math.MaxInt32))
	s.byFinish.Stop += int(p.ByFinish.Stop)
	s.byFinish.Length += int(p.ByFinish.Length)
	s.byFinish.Cancelled += int(p.ByFinish.Cancelled)
	s.byFinish.Error += int(p.ByFinish.Error)
	s.promptTokens += p.PromptTokens
	s.generationTokens += p.GenerationTokens
	if s.total == nil {
		s.ttft, s.tpot, s.total = new(histogram), new(histogram), new(histogram)
		s.queue, s.prefill, s.decode = new(histogram), new(histogram), new(histogram)
	}
	for _, x := range []struct {
		h   *histogram
		src *events.Histogram
	}{{s.ttft, p.TTFTMs}, {s.tpot, p.TPOTMs}, {s.total, p.TotalMs}, {s.queue, p.QueueMs},
		{s.prefill, p.PrefillMs}, {s.decode, p.DecodeMs}} {
		if x.src == nil || len(x.src.Bounds) == 0 {
			continue
		}
		for i, c := range x.src.Counts {
			lo, hi := bucketRange(x.src.Bounds, i)
			x.h.addRange(lo, hi, c)
		}
	}
}

// sampleCaches records the caches of every resident model as they stand
// after a cache sample at at.
func (t *timeline) sampleCaches(at int64, caches map[string]*modelCaches) {
	s := t.slot(at)
	if s == nil {
		return
	}
	var kvBytes, kvCap, hits, lookups int64
	var ratios float64
	var nRatios int
	for _, c := range caches {
		if r := c.kv; r.set {
			switch {
			case r.sample.CapacityBytes != nil && *r.sample.CapacityBytes > 0:
				kvBytes += r.sample.Bytes
				kvCap += *r.sample.CapacityBytes
			case r.sample.UsageRatio != nil:
				ratios += *r.sample.UsageRatio
				nRatios++
			}
		}
		if r := c.prefix; r.set && r.sample.Hits != nil && r.sample.Misses != nil {
			hits += *r.sample.Hits
			lookups += *r.sample.Hits + *r.sample.Misses
		}
	}
	switch {
	case kvCap > 0:
		s.kvUsage, s.kvSampled = float64(kvBytes)/float64(kvCap), true
	case nRatios > 0:
		s.kvUsage, s.kvSampled = ratios/float64(nRatios), true
	}
	if !s.prefixSampled {
		s.startHits, s.startLookups, s.prefixSampled = t.prefixHits, t.prefixLookups, true
	}
	if lookups < s.startLookups || lookups < s.endLookups || hits < s.startHits {
		// A model left (or restarted its counters): count the interval's
		// lookups from here.
		s.startHits, s.startLookups = hits, lookups
	}
	s.endHits, s.endLookups = hits, lookups
	t.prefixHits, t.prefixLookups = hits, lookups
}

// sampleScheduler records the resident models' scheduler as it stands
// after a scheduler sample at at: their summed tokens/s, rows, capacity
// and queue.
func (t *timeline) sampleScheduler(at int64, tps float64, active, capacity, queued int) {
	s := t.slot(at)
	if s == nil {
		return
	}
	s.schedSamples++
	s.schedTPS += tps
	s.schedActive, s.schedCap, s.schedQ = active, capacity, queued
}

// hitRate is the share of the interval's lookups that hit.
func (s *interval) hitRate() *float64 {
	if d := s.endLookups - s.startLookups; s.prefixSampled && d > 0 {
		return ptr(float64(s.endHits-s.startHits) / float64(d))
	}
	return nil
}

func (t *timeline) mark(m snapshot.ModelMark) { t.marks.add(m) }

// points lists the intervals from the oldest one used to the newest, empty
// ones included so the time axis is even.
func (t *timeline) points() []snapshot.TimelinePoint {
	if t.newest < 0 {
		return []snapshot.TimelinePoint{}
	}
	first := max(0, t.newest-int64(len(t.slots))+1)
	for first < t.newest && t.slots[first%int64(len(t.slots))].num != first {
		first++
	}
	out := make([]snapshot.TimelinePoint, 0, t.newest-first+1)
	lastDirty := first - t.perMinute // the newest changed interval seen so far
	for num := first; num <= t.newest; num++ {
		s := &t.slots[num%int64(len(t.slots))]
		// The point's minute is its intervals kept from from on: computed
		// again when one of them changed, or when the ring moved on past
		// its start (from moved) whether or not any changed.
		from := max(first, num-t.perMinute+1)
		stale := lastDirty >= from
		if s.num != num {
			pt := snapshot.TimelinePoint{At: num * t.width}
			pt.Minute = t.minute(num, first)
			out = append(out, pt)
			continue
		}
		if s.dirty {
			s.view = snapshot.TimelinePoint{At: num * t.width, Requests: s.requests, ByFinish: s.byFinish,
				PrefixHitRate: s.hitRate(), PromptTokens: s.promptTokens, GenerationTokens: s.generationTokens}
			if s.kvSampled {
				s.view.KVUsage = ptr(s.kvUsage)
			}
			if s.total != nil {
				s.view.TTFTMs, s.view.TPOTMs, s.view.TotalMs = s.ttft.quantiles(), s.tpot.quantiles(), s.total.quantiles()
				s.view.QueueMs, s.view.PrefillMs, s.view.DecodeMs = s.queue.quantiles(), s.prefill.quantiles(), s.decode.quantiles()
			}
			if s.schedSamples > 0 {
				s.view.Scheduler = &snapshot.IntervalScheduler{Samples: s.schedSamples, TokensPerSecond: s.schedTPS / float64(s.schedSamples),
					Active: s.schedActive, Capacity: s.schedCap, Queued: s.schedQ}
			}
			s.dirty, lastDirty, stale = false, num, true
		}
		if stale || s.minute == nil || s.minuteFrom != from {
			s.minute, s.minuteFrom = t.minute(num, first), from
		}
		pt := s.view
		pt.Minute = s.minute
		out = append(out, pt)
	}
	return out
}

// minute summarises the intervals kept of the minute that ends with
// interval num (those from first on).
func (t *timeline) minute(num, first int64) *snapshot.Minute {
	m := &snapshot.Minute{}
	var hits, lookups int64
	merged := false
	for n := max(first, num-t.perMinute+1); n <= num; n++ {
		s := &t.slots[n%int64(len(t.slots))]
		if s.num != n {
			continue
		}
		m.Requests += s.requests
		if s.prefixSampled {
			hits += s.endHits - s.startHits
			lookups += s.endLookups - s.startLookups
		}
		if s.total == nil || s.requests == 0 {
			continue
		}
		if !merged {
			for i := range t.scratch {
				t.scratch[i].reset()
			}
			merged = true
		}
		for i, h := range [...]*histogram{s.ttft, s.tpot, s.total, s.queue} {
			t.scratch[i].merge(h)
		}
	}
	if merged {
		m.TTFTMs, m.TPOTMs = t.scratch[0].quantiles(), t.scratch[1].quantiles()
		m.TotalMs, m.QueueMs = t.scratch[2].quantiles(), t.scratch[3].quantiles()
	}
	if lookups > 0 {
		m.PrefixHitRate = ptr(float64(hits) / float64(lookups))
	}
	return m
}
