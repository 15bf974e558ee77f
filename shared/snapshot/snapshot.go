// Package snapshot defines the live view the backend serves at
// /api/metrics/snapshot and streams at /api/metrics/stream.
//
// It is a strict superset of the original TypeScript module's
// MetricsSnapshot (its protocol.ts), which other host code reads: every
// field of it is here under the same name, and a field typed "T | null"
// there is always present, null when unknown. The additions are:
// Snapshot.version, Snapshot.timeline (whose points are all additions),
// Snapshot.intervalMs and Snapshot.marks, Model.updatedAt, Window.size,
// Window.tpotMs, Window.lengths and Window.perModel, Distribution.p99,
// .min, .p1 and .p5, SeriesPoint.capacity, usageRatio on a cache
// reading of an engine that reports a ratio rather than bytes, and
// Snapshot.sources.
package snapshot

import (
	"slices"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// Snapshot is the whole live view at one instant. Version moves only when an
// event or a source's state changed something, so equal versions mean equal
// contents.
type Snapshot struct {
	At         int64         `json:"at"`
	StartedAt  int64         `json:"startedAt"`
	Version    uint64        `json:"version"`
	Models     []Model       `json:"models"`
	Schedulers []Scheduler   `json:"schedulers"`
	Caches     []Cache       `json:"caches"`
	Requests   Requests      `json:"requests"`
	Series     []SeriesPoint `json:"series"`
	// Timeline is the last intervals of IntervalMs each, oldest first;
	// Marks the recent model loads, unloads and swaps, oldest first.
	Timeline   []TimelinePoint `json:"timeline"`
	IntervalMs int64           `json:"intervalMs"`
	Marks      []ModelMark     `json:"marks"`
	// Sources are the event sources the backend follows (serve's
	// --events-url), absent when it follows none: a host it cannot reach
	// sends no events, which must not read as "nothing measured yet".
	Sources []Source `json:"sources,omitempty"`
}

// Source is the state of one followed event source.
type Source struct {
	Kind string `json:"kind"` // SourceFollow
	// Host is the URL's host[:port], without its credentials, path or
	// query: what a viewer of the panel may see.
	Host  string `json:"host"`
	State string `json:"state"` // SourceConnecting, SourceConnected, SourceUnreached
	Since int64  `json:"since"` // when it entered State, epoch ms
	// FailedAttempts are the attempts to connect that failed since the
	// host was last reached; Error the last one's reason, without the URL.
	FailedAttempts uint64 `json:"failedAttempts"`
	Error          string `json:"error,omitempty"`
}

// Source kinds and states.
const (
	SourceFollow = "follow"

	SourceConnecting = "connecting" // before the first attempt ends, and reconnecting after a stream ended
	SourceConnected  = "connected"
	SourceUnreached  = "unreached" // the last attempt could not connect, or the host refused it
)

// Model states.
const (
	StateLoading  = "loading"
	StateResident = "resident"
	StateUnloaded = "unloaded"
	StateFailed   = "failed"
)

// Model is one model's lifecycle and memory. LastUnloadMs is drain plus
// flush; a swap is an evicted unload followed within 120 s by a finished
// load, and LastSwapMs (unload plus load) is credited to the incoming model.
type Model struct {
	Model            string   `json:"model"`
	State            string   `json:"state"`
	Loads            int64    `json:"loads"`
	Unloads          int64    `json:"unloads"`
	LastLoadMs       *float64 `json:"lastLoadMs"`
	LastUnloadMs     *float64 `json:"lastUnloadMs"`
	LastUnloadReason *string  `json:"lastUnloadReason"`
	Swaps            int64    `json:"swaps"`
	LastSwapMs       *float64 `json:"lastSwapMs"`
	WeightsBytes     int64    `json:"weightsBytes"`
	KVBytes          int64    `json:"kvBytes"`
	PrefixCacheBytes int64    `json:"prefixCacheBytes"`
	LastError        *string  `json:"lastError"`
	UpdatedAt        int64    `json:"updatedAt"`
}

// Scheduler is the latest scheduler sample of one model.
type Scheduler struct {
	events.SchedulerSample
	At int64 `json:"at"`
}

// Cache is one model's caches, each its latest reading; null before the
// model's first sample of that cache.
type Cache struct {
	Model  string       `json:"model"`
	KV     *KVCache     `json:"kv"`
	Prefix *PrefixCache `json:"prefix"`
}

// KVCache is a reading of the batch's KV cache.
type KVCache struct {
	At            int64    `json:"at"`
	Bytes         int64    `json:"bytes"`
	CapacityBytes *int64   `json:"capacityBytes"`
	UsageRatio    *float64 `json:"usageRatio,omitempty"`
}

// PrefixCache is a reading of the prompt cache. Hits and misses are
// lookups since the model loaded (0 when the engine reports none); HitRate
// is hits/(hits+misses), null before any lookup.
type PrefixCache struct {
	At            int64    `json:"at"`
	Bytes         int64    `json:"bytes"`
	CapacityBytes *int64   `json:"capacityBytes"`
	Hits          int64    `json:"hits"`
	Misses        int64    `json:"misses"`
	HitRate       *float64 `json:"hitRate"`
	UsageRatio    *float64 `json:"usageRatio,omitempty"`
}

// Requests summarises finished requests: totals since start, a sliding
// window of distributions, and the most recent ones (newest last).
type Requests struct {
	Finished int64        `json:"finished"`
	ByFinish FinishTotals `json:"byFinish"`
	Window   Window       `json:"window"`
	Recent   []Recent     `json:"recent"`
}

// FinishTotals counts finished requests by finish reason. In JSON its keys
// come in the anchor's order, stop, length, cancelled, error, then any
// other sorted, whichever encoder writes it.
type FinishTotals map[events.FinishReason]int64

// finishOrder is the anchor's order of the finish reasons.
var finishOrder = [...]events.FinishReason{events.FinishStop, events.FinishLength, events.FinishCancelled, events.FinishError}

// Keys are f's keys in the anchor's order.
func (f FinishTotals) Keys() []events.FinishReason {
	keys := make([]events.FinishReason, 0, len(f))
	for _, k := range finishOrder {
		if _, ok := f[k]; ok {
			keys = append(keys, k)
		}
	}
	rest := len(keys)
	for k := range f {
		if !slices.Contains(finishOrder[:], k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys[rest:])
	return keys
}

// MarshalJSON writes f with its keys in the anchor's order.
func (f FinishTotals) MarshalJSON() ([]byte, error) {
	if f == nil {
		return []byte("null"), nil
	}
	e := encoder{}
	e.finishTotals(f)
	return e.b, nil
}

// Window holds distributions over the last Size finished requests. A
// distribution with no values (every one null) is null. The requests of an
// engine scraped over its /metrics (--scrape) are not known one by one:
// its polls' histogram increases stand for them, the last Size of them (the
// oldest poll pro-rated), and the quantiles are read off their buckets as
// Prometheus' histogram_quantile reads them (docs/export.md); reported and
// scraped requests each fill up to Size.
type Window struct {
	Size                   int           `json:"size"`
	Count                  int           `json:"count"`
	QueueMs                *Distribution `json:"queueMs"`
	TTFTMs                 *Distribution `json:"ttftMs"`
	PrefillTokensPerSecond *Distribution `json:"prefillTokensPerSecond"`
	DecodeTokensPerSecond  *Distribution `json:"decodeTokensPerSecond"`
	TotalMs                *Distribution `json:"totalMs"`
	// TPOTMs is the time per output token after the first, derived as
	// 1000 / decodeTokensPerSecond of each request that reports a decode
	// rate (the host defines that rate as the tokens after the first over
	// the decode time).
	TPOTMs *Distribution `json:"tpotMs"`
	// CachedPromptShare is cached prompt tokens over prompt tokens in the
	// window, null when the window has no prompt tokens.
	CachedPromptShare *float64 `json:"cachedPromptShare"`
	// Lengths is how many of the window's requests had each prompt and
	// generation length, by bucket (addition); null when empty.
	Lengths *Lengths `json:"lengths"`
	// PerModel is the same window split by model, keyed by model name.
	PerModel map[string]*Window `json:"perModel,omitempty"`
}

// Lengths counts requests by length in tokens: Prompt[i] and
// Generation[i] are the requests of at most Bounds[i] tokens and more than
// Bounds[i-1]; the last of each, past every bound, is over the last bound.
type Lengths struct {
	Bounds     []int64 `json:"bounds"`
	Prompt     []int   `json:"prompt"`
	Generation []int   `json:"generation"`
}

// LengthBounds are the bounds of Lengths: 1, 2, 5 times the powers of ten,
// as vLLM buckets request lengths, up to a million tokens.
var LengthBounds = []int64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000,
	100000, 200000, 500000, 1000000}

// Distribution summarises one quantity (nearest-rank percentiles).
type Distribution struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
	// Min, P1 and P5 are the low tail (additions): for a rate (prefill,
	// decode tokens per second) the slow requests are there.
	Min float64 `json:"min"`
	P1  float64 `json:"p1"`
	P5  float64 `json:"p5"`
}

// Recent is one finished request as reported, with its event time.
type Recent struct {
	events.RequestFinished
	At int64 `json:"at"`
}

// SeriesPoint is the scheduler over one second of the series' grid (At is
// the newest sample in it), summed over the models: each one's samples in
// that second, or its latest sample before, carried while fresh (within
// twice its own sampling gap) and not past its unload, so that engines
// sampled at their own moments add up on every point.
type SeriesPoint struct {
	At              int64   `json:"at"`
	TokensPerSecond float64 `json:"tokensPerSecond"`
	Active          int     `json:"active"`
	Capacity        int     `json:"capacity"`
	Queued          int     `json:"queued"`
}

// Reading is one cache of one model, flattened for tables and gauges.
// Hits and misses are set for a prefix cache only.
type Reading struct {
	Model         string
	Cache         events.CacheKind
	At            int64
	Bytes         int64
	CapacityBytes *int64
	UsageRatio    *float64
	Hits, Misses  *int64
	HitRate       *float64
}

// Readings lists every cache reading of caches, a model's kv before its
// prefix cache.
func Readings(caches []Cache) []Reading {
	out := make([]Reading, 0, 2*len(caches))
	for _, c := range caches {
		if kv := c.KV; kv != nil {
			out = append(out, Reading{Model: c.Model, Cache: events.CacheKV, At: kv.At, Bytes: kv.Bytes,
				CapacityBytes: kv.CapacityBytes, UsageRatio: kv.UsageRatio})
		}
		if p := c.Prefix; p != nil {
			hits, misses := p.Hits, p.Misses
			out = append(out, Reading{Model: c.Model, Cache: events.CachePrefix, At: p.At, Bytes: p.Bytes,
				CapacityBytes: p.CapacityBytes, UsageRatio: p.UsageRatio, Hits: &hits, Misses: &misses, HitRate: p.HitRate})
		}
	}
	return out
}

// TimelinePoint is one fixed interval of the live timeline (Interval ms
// from At): the requests that finished in it, their timing quantiles, and
// the caches as last sampled in it.
type TimelinePoint struct {
	At       int64        `json:"at"`
	Requests int          `json:"requests"`
	ByFinish FinishCounts `json:"byFinish"`
	// TTFTMs, TPOTMs and TotalMs are quantiles over the requests finished
	// in the interval that report the value; null when none did. They come
	// from a log-linear histogram (16 bins an octave), so each is within
	// about 3 % of the observed value. A scraped engine's histogram
	// increases count in the interval of their poll, each bucket's values
	// spread evenly over it.
	TTFTMs  *Quantiles `json:"ttftMs"`
	TPOTMs  *Quantiles `json:"tpotMs"`
	TotalMs *Quantiles `json:"totalMs"`
	// QueueMs, PrefillMs (time to first token less the queue) and DecodeMs
	// (the total less the time to first token) are quantiles as the three
	// above (additions).
	QueueMs   *Quantiles `json:"queueMs"`
	PrefillMs *Quantiles `json:"prefillMs"`
	DecodeMs  *Quantiles `json:"decodeMs"`
	// PromptTokens and GenerationTokens are the tokens of the requests
	// finished in the interval (additions): over the interval's width,
	// the prompt and generation throughput.
	PromptTokens     int64 `json:"promptTokens"`
	GenerationTokens int64 `json:"generationTokens"`
	// KVUsage is the resident models' KV bytes over their KV capacity at
	// the interval's last kv sample (or the mean reported ratio where
	// engines report one); null without a sample with a capacity.
	KVUsage *float64 `json:"kvUsage"`
	// PrefixHitRate is the prefix-cache lookups that hit, over the lookups
	// made during the interval; null when none were.
	PrefixHitRate *float64 `json:"prefixHitRate"`
	// Scheduler is the scheduler over the interval (addition); null when
	// no model sampled its scheduler in it.
	Scheduler *IntervalScheduler `json:"scheduler"`
	// Minute is the minute that ends with the interval (addition): a 5 s
	// interval at one request a second holds five requests, too few for a
	// p99, and its prefix hit rate swings with the few prompts looked up.
	Minute *Minute `json:"minute"`
}

// IntervalScheduler is the scheduler over one timeline interval, summed
// over the resident models as at each scheduler sample in it:
// TokensPerSecond is the mean of those sums, Active, Capacity and Queued
// the sums as of the interval's last sample, Samples how many samples
// the interval held.
type IntervalScheduler struct {
	Samples         int     `json:"samples"`
	TokensPerSecond float64 `json:"tokensPerSecond"`
	Active          int     `json:"active"`
	Capacity        int     `json:"capacity"`
	Queued          int     `json:"queued"`
}

// MinuteMs is the span of a TimelinePoint's Minute: the intervals of the
// 60 s that end with the point's (twelve at 5 s), or the point's own
// interval alone when it is a minute or longer.
const MinuteMs = 60_000

// Minute summarises the intervals of the minute that ends with a timeline
// point's (fewer at the start of the timeline): the requests that
// finished in them and the quantiles of their timings, null when none
// reported the value (the same histograms as an interval's, merged), and
// the prefix-cache lookups made in them that hit, over those lookups
// (null when none were): what Grafana's rate(...[1m]) reads.
type Minute struct {
	Requests      int        `json:"requests"`
	TTFTMs        *Quantiles `json:"ttftMs"`
	TPOTMs        *Quantiles `json:"tpotMs"`
	TotalMs       *Quantiles `json:"totalMs"`
	QueueMs       *Quantiles `json:"queueMs"`
	PrefixHitRate *float64   `json:"prefixHitRate"`
}

// FinishCounts counts finished requests by finish reason.
type FinishCounts struct {
	Stop      int `json:"stop"`
	Length    int `json:"length"`
	Cancelled int `json:"cancelled"`
	Error     int `json:"error"`
}

// Quantiles are the p50, p95 and p99 of one quantity in one interval.
type Quantiles struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
}

// ModelMark is a model's load, unload, swap or failed load, for marks on
// the timeline's time axis.
type ModelMark struct {
	At    int64    `json:"at"`
	Model string   `json:"model"`
	Kind  string   `json:"kind"` // MarkLoad, MarkUnload, MarkSwap, MarkFailed
	Ms    *float64 `json:"ms"`   // the load's, unload's or swap's time when known
}

// Model mark kinds.
const (
	MarkLoad   = "load"
	MarkUnload = "unload"
	MarkSwap   = "swap"
	MarkFailed = "failed"
)
