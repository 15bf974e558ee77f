package events

import (
	"math"
)

// TypeRequestsSample is a model's requests finished over an interval, as
// an engine's own Prometheus counters and histograms count them: what a
// --scrape target reports in place of one request.finished a request. It
// exists on the bus only: no host publishes it, the wire has no form of it
// (Parse reads the type as one it ignores), and the exporters leave it out
// (the engine serves those histograms itself).
const TypeRequestsSample Type = "requests.sample"

// RequestsSample is the increase, between two polls of an engine's
// /metrics, of its request counters and histograms for one model. Single
// requests are not known: the timings are distributions, each an engine
// histogram's bucket increases with its bounds. A histogram the engine does
// not export is nil; so is CachedPromptTokens when it counts none.
type RequestsSample struct {
	Model string
	// IntervalMs is the time between the two polls.
	IntervalMs float64
	// Finished counts the requests that finished in the interval; ByFinish
	// those of them whose reason the engine tells (none, for an engine
	// that counts requests without reasons).
	Finished int64
	ByFinish FinishTotalsByReason
	// PromptTokens, CachedPromptTokens and GenerationTokens are the token
	// counters' increases: the tokens processed in the interval.
	PromptTokens       int64
	CachedPromptTokens *int64
	GenerationTokens   int64
	// Timings in milliseconds.
	QueueMs, TTFTMs, TotalMs, TPOTMs, PrefillMs, DecodeMs *Histogram
	// Lengths in tokens.
	PromptLengths, GenerationLengths *Histogram
}

// FinishTotalsByReason counts requests by the four finish reasons.
type FinishTotalsByReason struct {
	Stop, Length, Cancelled, Error int64
}

// Sum is the requests counted under a reason.
func (f FinishTotalsByReason) Sum() int64 { return f.Stop + f.Length + f.Cancelled + f.Error }

// Histogram is a distribution as Prometheus buckets it: Counts[i] values
// at most Bounds[i] and over Bounds[i-1], and the last count over every
// bound; Sum their total.
type Histogram struct {
	Bounds []float64 // finite, ascending
	Counts []int64   // len(Bounds)+1
	Sum    float64
}

// Count is how many values the histogram holds.
func (h *Histogram) Count() int64 {
	var n int64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// MaxBuckets bounds a histogram's bounds; engines use a few dozen.
const MaxBuckets = 256

// maxBound bounds a bucket's bound and a histogram's sum: finite, and
// orders past any duration or length.
const maxBound = 1e15

func validateRequests(p *RequestsSample) *Error {
	err := firstErr(name("model", p.Model, MaxModelName),
		number("intervalMs", p.IntervalMs, MaxDurationMs),
		integer("finished", p.Finished, MaxLookups),
		integer("byFinish.stop", p.ByFinish.Stop, MaxLookups), integer("byFinish.length", p.ByFinish.Length, MaxLookups),
		integer("byFinish.cancelled", p.ByFinish.Cancelled, MaxLookups), integer("byFinish.error", p.ByFinish.Error, MaxLookups),
		integer("promptTokens", p.PromptTokens, MaxLookups), optInt("cachedPromptTokens", p.CachedPromptTokens, MaxLookups),
		integer("generationTokens", p.GenerationTokens, MaxLookups))
	if err != nil {
		return err
	}
	if p.ByFinish.Sum() > p.Finished {
		return reject("byFinish", "counts %d requests, more than the %d finished", p.ByFinish.Sum(), p.Finished)
	}
	if p.CachedPromptTokens != nil && *p.CachedPromptTokens > p.PromptTokens {
		return reject("cachedPromptTokens", "%d exceeds promptTokens %d", *p.CachedPromptTokens, p.PromptTokens)
	}
	for _, h := range []struct {
		field string
		h     *Histogram
	}{{"queueMs", p.QueueMs}, {"ttftMs", p.TTFTMs}, {"totalMs", p.TotalMs}, {"tpotMs", p.TPOTMs},
		{"prefillMs", p.PrefillMs}, {"decodeMs", p.DecodeMs}, {"promptLengths", p.PromptLengths},
		{"generationLengths", p.GenerationLengths}} {
		if err := histogram(h.field, h.h); err != nil {
			return err
		}
	}
	return nil
}

// histogram checks an optional histogram: bounds finite and strictly
// ascending, a count a bucket and one over them, counts and sum from 0 to
// their bounds.
func histogram(field string, h *Histogram) *Error {
	if h == nil {
		return nil
	}
	switch {
	case len(h.Bounds) > MaxBuckets:
		return reject(field, "has %d bounds, over %d", len(h.Bounds), MaxBuckets)
	case len(h.Counts) != len(h.Bounds)+1:
		return reject(field, "has %d counts for %d bounds, want one more", len(h.Counts), len(h.Bounds))
	}
	for i, b := range h.Bounds {
		if math.IsNaN(b) || math.Abs(b) > maxBound || i > 0 && !(b > h.Bounds[i-1]) {
			return reject(field, "bounds must be finite and ascending, got %g after %v", b, h.Bounds[:i])
		}
	}
	var n int64
	for _, c := range h.Counts {
		if c < 0 || c > MaxLookups-n {
			return reject(field, "counts must be from 0 to %d in all, got %d", int64(MaxLookups), c)
		}
		n += c
	}
	if math.IsNaN(h.Sum) || h.Sum < 0 || h.Sum > maxBound {
		return reject(field, "sum must be a number from 0 to %g, got %g", float64(maxBound), h.Sum)
	}
	return nil
}
