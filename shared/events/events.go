// Package events defines the serving events a host publishes and this module
// consumes. On the wire each event is one flat JSON object, as the host
// publishes its core events:
//
//	{"type":"request.finished","at":1764690000000,"model":"m","requestId":"r1",...}
//
// where at is epoch milliseconds and the type's payload fields sit beside
// type and at. The envelope form {"type","at","data":{...}}, which earlier
// recordings of this module use, is read too; what the module writes is
// always flat. Every duration is milliseconds and every size bytes.
// Payloads never carry prompt or completion text.
package events

// Type names an event. Types this module does not know (catalog.changed,
// job.state, <module>.<name>) are valid on the wire and ignored.
type Type string

// The core event types the metrics store reduces.
const (
	TypeModelLoad       Type = "model.load"
	TypeModelUnload     Type = "model.unload"
	TypeModelMemory     Type = "model.memory"
	TypeRequestFinished Type = "request.finished"
	TypeSchedulerSample Type = "scheduler.sample"
	TypeCacheSample     Type = "cache.sample"
)

// Event is one decoded event. Payload holds a pointer to the payload struct
// of a core type (*ModelLoad, *ModelUnload, …), or nil for an ignored type.
type Event struct {
	Type    Type
	At      int64
	Payload any
}

// Load phases of model.load.
const (
	PhaseStarted  = "started"
	PhaseFinished = "finished"
	PhaseFailed   = "failed"
)

// ModelLoad reports a model load starting, finishing or failing.
type ModelLoad struct {
	Model        string   `json:"model"`
	Phase        string   `json:"phase"`
	Ms           *float64 `json:"ms,omitempty"`
	WeightsBytes *int64   `json:"weightsBytes,omitempty"`
	Resumed      *bool    `json:"resumed,omitempty"`
	Error        string   `json:"error,omitempty"`
}

// Unload reasons of model.unload.
const (
	ReasonEvicted   = "evicted"
	ReasonRequested = "requested"
	ReasonIdle      = "idle"
	ReasonFailed    = "failed"
)

// ModelUnload reports a model leaving memory: drainMs waiting for its
// requests to finish, then flushMs writing caches out when flushed.
type ModelUnload struct {
	Model   string   `json:"model"`
	Reason  string   `json:"reason"`
	DrainMs float64  `json:"drainMs"`
	Flushed bool     `json:"flushed"`
	FlushMs *float64 `json:"flushMs,omitempty"`
}

// ModelMemory reports what a resident model holds in memory.
type ModelMemory struct {
	Model            string `json:"model"`
	WeightsBytes     int64  `json:"weightsBytes"`
	KVBytes          int64  `json:"kvBytes"`
	PrefixCacheBytes int64  `json:"prefixCacheBytes"`
}

// FinishReason is why a generation request ended: request.finished's
// finish.
type FinishReason string

// Finish reasons of request.finished.
const (
	FinishStop      FinishReason = "stop"
	FinishLength    FinishReason = "length"
	FinishCancelled FinishReason = "cancelled"
	FinishError     FinishReason = "error"
)

// RequestFinished reports one finished generation request. Timings that did
// not happen (a request cancelled before its first token) are null.
type RequestFinished struct {
	Model                  string       `json:"model"`
	RequestID              string       `json:"requestId"`
	Finish                 FinishReason `json:"finish"`
	PromptTokens           int64        `json:"promptTokens"`
	CachedPromptTokens     int64        `json:"cachedPromptTokens"`
	CompletionTokens       int64        `json:"completionTokens"`
	QueueMs                *float64     `json:"queueMs"`
	TTFTMs                 *float64     `json:"ttftMs"`
	PrefillTokensPerSecond *float64     `json:"prefillTokensPerSecond"`
	DecodeTokensPerSecond  *float64     `json:"decodeTokensPerSecond"`
	TotalMs                float64      `json:"totalMs"`
}

// SchedulerSample is a model's batch scheduler at one instant: rows decoding
// (active) out of capacity, requests waiting (queued), and the generation
// rate over the last sampling interval.
type SchedulerSample struct {
	Model           string  `json:"model"`
	Active          int     `json:"active"`
	Capacity        int     `json:"capacity"`
	Queued          int     `json:"queued"`
	TokensPerSecond float64 `json:"tokensPerSecond"`
}

// CacheKind names a model's cache: cache.sample's cache.
type CacheKind string

// Cache kinds of cache.sample.
const (
	CacheKV     CacheKind = "kv"
	CachePrefix CacheKind = "prefix"
)

// CacheSample is a model's KV or prefix cache at one instant. Hits and
// misses are running totals since the model loaded; null where the cache
// does no lookups (kv).
type CacheSample struct {
	Model         string    `json:"model"`
	Cache         CacheKind `json:"cache"`
	Bytes         int64     `json:"bytes"`
	CapacityBytes *int64    `json:"capacityBytes"`
	Hits          *int64    `json:"hits"`
	Misses        *int64    `json:"misses"`
	// UsageRatio is the share of capacity in use, 0 to 1, from engines that
	// report a ratio rather than bytes (vLLM, SGLang and llama.cpp scraped
	// over their /metrics); absent when Bytes and CapacityBytes say it.
	UsageRatio *float64 `json:"usageRatio,omitempty"`
}
