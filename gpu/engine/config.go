package engine

import (
	"errors"
	"fmt"
	"time"
)

// Config is the simulated model and its cost model. Every field has a flag
// in `mlx-metrics engine`.
//
// The cost model: one scheduler step prefills up to PrefillChunk prompt
// tokens (shared first come, first served among the rows still prefilling)
// and decodes one token for every row past its prefill. The step takes
//
//	prefillTokens/PrefillRate + (decodeRows > 0 ? (1 + BatchSlowdown*(decodeRows-1)) / DecodeRate : 0)
//
// seconds. So one stream decodes at DecodeRate tokens/s, n streams at
// DecodeRate/(1+BatchSlowdown*(n-1)) each, and an uncached prompt of P
// tokens reaches its first token after P/PrefillRate seconds (its last
// prefill step also yields the first token).
type Config struct {
	Model            string
	PrefillRate      float64 // prompt tokens per second
	DecodeRate       float64 // tokens per second of a lone stream
	BatchSlowdown    float64 // extra decode step time per additional decoding row
	BatchCapacity    int     // rows decoding or prefilling at once
	PrefillChunk     int     // prompt tokens per step (chunked prefill)
	PageTokens       int     // tokens per KV page and per prefix-cache block
	KVBytesPerToken  int64   // simulated KV size of one token
	KVBudgetBytes    int64   // the paged KV cache's byte budget
	PrefixCacheBytes int64   // the prefix cache's byte budget; 0 disables it
	MaxContext       int     // prompt + completion tokens per request
	WeightsBytes     int64   // simulated weights, reported in model.memory
	LoadTime         time.Duration
	// SampleInterval is how often scheduler/cache/memory samples are
	// published while busy.
	SampleInterval time.Duration
}

// DefaultConfig is a small model on a laptop GPU: 4000 tok/s prefill, 50
// tok/s decode, 16 rows, an 8 GiB KV budget at 128 KiB per token.
func DefaultConfig() Config {
	return Config{
		Model:            "reference-sim",
		PrefillRate:      4000,
		DecodeRate:       50,
		BatchSlowdown:    0.05,
		BatchCapacity:    16,
		PrefillChunk:     512,
		PageTokens:       16,
		KVBytesPerToken:  128 << 10,
		KVBudgetBytes:    8 << 30,
		PrefixCacheBytes: 2 << 30,
		MaxContext:       32768,
		WeightsBytes:     4 << 30,
		LoadTime:         400 * time.Millisecond,
		SampleInterval:   time.Second,
	}
}

// Validate says what is wrong with c, every problem at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Model == "" {
		bad("model: must not be empty")
	}
	if !(c.PrefillRate > 0) {
		bad("prefill-rate: must be > 0 tokens/s, got %v", c.PrefillRate)
	}
	if !(c.DecodeRate > 0) {
		bad("decode-rate: must be > 0 tokens/s, got %v", c.DecodeRate)
	}
	if !(c.BatchSlowdown >= 0) {
		bad("batch-slowdown: must be >= 0, got %v", c.BatchSlowdown)
	}
	if c.BatchCapacity < 1 {
		bad("batch-capacity: must be >= 1, got %d", c.BatchCapacity)
	}
	if c.PrefillChunk < 1 {
		bad("prefill-chunk: must be >= 1 token, got %d", c.PrefillChunk)
	}
	if c.PageTokens < 1 {
		bad("page-tokens: must be >= 1, got %d", c.PageTokens)
	}
	if c.KVBytesPerToken < 1 {
		bad("kv-bytes-per-token: must be >= 1, got %d", c.KVBytesPerToken)
	}
	if c.PageTokens >= 1 && c.KVBytesPerToken >= 1 && c.KVBudgetBytes < c.pageBytes() {
		bad("kv-budget: %d bytes holds not one page (%d bytes)", c.KVBudgetBytes, c.pageBytes())
	}
	if c.PrefixCacheBytes < 0 {
		bad("prefix-cache-bytes: must be >= 0 (0 disables the cache), got %d", c.PrefixCacheBytes)
	}
	if c.MaxContext < 2 {
		bad("max-context: must be >= 2 tokens, got %d", c.MaxContext)
	}
	if c.WeightsBytes < 0 {
		bad("weights-bytes: must be >= 0, got %d", c.WeightsBytes)
	}
	if c.LoadTime < 0 {
		bad("load-ms: must be >= 0, got %v", c.LoadTime)
	}
	if c.SampleInterval <= 0 {
		bad("sample interval: must be > 0, got %v", c.SampleInterval)
	}
	return errors.Join(errs...)
}

func (c Config) pageBytes() int64 { return int64(c.PageTokens) * c.KVBytesPerToken }

func (c Config) totalPages() int { return int(c.KVBudgetBytes / c.pageBytes()) }

func (c Config) pagesFor(tokens int) int { return (tokens + c.PageTokens - 1) / c.PageTokens }

// StepTime is the cost model: how long one scheduler step takes.
func (c Config) StepTime(prefillTokens, decodeRows int) time.Duration {
	s := float64(prefillTokens) / c.PrefillRate
	if decodeRows > 0 {
		s += (1 + c.BatchSlowdown*float64(decodeRows-1)) / c.DecodeRate
	}
	return time.Duration(s * float64(time.Second))
}
