// Package snapshot defines the live view the backend serves at
// /api/metrics/snapshot and streams at /api/metrics/stream.
package snapshot

import "github.com/mlx-bun/mlx-metrics/shared/events"

// Snapshot is the whole live view at one instant. Version moves only when an
// event changed something, so equal versions mean equal contents.
type Snapshot struct {
	At         int64         `json:"at"`
	StartedAt  int64         `json:"startedAt"`
	Version    uint64        `json:"version"`
	Models     []Model       `json:"models"`
	Schedulers []Scheduler   `json:"schedulers"`
	Caches     []Cache       `json:"caches"`
	Requests   Requests      `json:"requests"`
	Series     []SeriesPoint `json:"series"`
}

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
	LastUnloadReason string   `json:"lastUnloadReason,omitempty"`
	Swaps            int64    `json:"swaps"`
	LastSwapMs       *float64 `json:"lastSwapMs"`
	WeightsBytes     int64    `json:"weightsBytes"`
	KVBytes          int64    `json:"kvBytes"`
	PrefixCacheBytes int64    `json:"prefixCacheBytes"`
	LastError        string   `json:"lastError,omitempty"`
	UpdatedAt        int64    `json:"updatedAt"`
}

// Scheduler is the latest scheduler sample of one model.
type Scheduler struct {
	events.SchedulerSample
	At int64 `json:"at"`
}

// Cache is the latest sample of one model's kv or prefix cache. HitRate is
// hits/(hits+misses), null before any lookup.
type Cache struct {
	events.CacheSample
	At      int64    `json:"at"`
	HitRate *float64 `json:"hitRate"`
}

// Requests summarises finished requests: totals since start, a sliding
// window of distributions, and the most recent ones (newest last).
type Requests struct {
	Finished int64            `json:"finished"`
	ByFinish map[string]int64 `json:"byFinish"`
	Window   Window           `json:"window"`
	Recent   []Recent         `json:"recent"`
}

// Window holds distributions over the last Size finished requests. A
// distribution with no values (every one null) is null.
type Window struct {
	Size                   int           `json:"size"`
	Count                  int           `json:"count"`
	QueueMs                *Distribution `json:"queueMs"`
	TTFTMs                 *Distribution `json:"ttftMs"`
	PrefillTokensPerSecond *Distribution `json:"prefillTokensPerSecond"`
	DecodeTokensPerSecond  *Distribution `json:"decodeTokensPerSecond"`
	TotalMs                *Distribution `json:"totalMs"`
	// CachedPromptShare is cached prompt tokens over prompt tokens in the
	// window, null when the window has no prompt tokens.
	CachedPromptShare *float64 `json:"cachedPromptShare"`
	// PerModel is the same window split by model, keyed by model name.
	PerModel map[string]*Window `json:"perModel,omitempty"`
}

// Distribution summarises one quantity (nearest-rank percentiles).
type Distribution struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// Recent is one finished request as reported, with its event time.
type Recent struct {
	events.RequestFinished
	At int64 `json:"at"`
}

// SeriesPoint is the scheduler at one instant, summed over models sampled at
// the same at.
type SeriesPoint struct {
	At              int64   `json:"at"`
	TokensPerSecond float64 `json:"tokensPerSecond"`
	Active          int     `json:"active"`
	Capacity        int     `json:"capacity"`
	Queued          int     `json:"queued"`
}
