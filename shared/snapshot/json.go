package snapshot

import (
	"math"
	"sort"
	"strconv"
	"unicode/utf8"
)

// The snapshot is encoded on every change for every stream and on every
// GET, so it has an encoder of its own: appends, no reflection, and the
// bytes encoding/json would write for the same value (TestAppendJSONIsJSON
// holds it to that). A float JSON cannot carry is written as 0, or null
// where the field is optional, and reported.

// encoder appends JSON to b.
type encoder struct {
	b         []byte
	sanitized bool
}

// AppendJSON appends s as JSON to b; sanitized reports a number JSON cannot
// carry (NaN, ±Inf) that was written as 0 or null.
func AppendJSON(b []byte, s *Snapshot) (out []byte, sanitized bool) {
	e := encoder{b: b}
	e.snapshot(s)
	return e.b, e.sanitized
}

func (e *encoder) raw(s string) { e.b = append(e.b, s...) }

func (e *encoder) key(k string) { e.b = append(e.b, k...) } // k is `"name":`, or `,"name":`

func (e *encoder) int(v int64) { e.b = strconv.AppendInt(e.b, v, 10) }

func (e *encoder) uint(v uint64) { e.b = strconv.AppendUint(e.b, v, 10) }

// float writes f as encoding/json does (like an ES6 number: 'f' between
// 1e-6 and 1e21, 'e' outside, exponents not padded).
func (e *encoder) float(f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		e.sanitized = true
		f = 0
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(e.b)
	e.b = strconv.AppendFloat(e.b, f, format, -1, 64)
	if format == 'e' {
		if n := len(e.b); n-start >= 4 && e.b[n-4] == 'e' && e.b[n-3] == '-' && e.b[n-2] == '0' {
			e.b[n-2] = e.b[n-1]
			e.b = e.b[:n-1]
		}
	}
}

func (e *encoder) optFloat(f *float64) {
	switch {
	case f == nil:
		e.raw("null")
	case math.IsNaN(*f) || math.IsInf(*f, 0):
		e.sanitized = true
		e.raw("null")
	default:
		e.float(*f)
	}
}

func (e *encoder) optInt(v *int64) {
	if v == nil {
		e.raw("null")
		return
	}
	e.int(*v)
}

func (e *encoder) optString(s *string) {
	if s == nil {
		e.raw("null")
		return
	}
	e.string(*s)
}

// string writes s quoted, escaping as encoding/json does by default:
// control characters, quote and backslash, <, > and & (HTML-safe), U+2028
// and U+2029, and each invalid UTF-8 byte as U+FFFD.
func (e *encoder) string(s string) {
	const hex = "0123456789abcdef"
	b := append(e.b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	e.b = append(b, '"')
}

// list writes n elements with elem, or null for a nil slice.
func list(e *encoder, isNil bool, n int, elem func(i int)) {
	if isNil {
		e.raw("null")
		return
	}
	e.b = append(e.b, '[')
	for i := range n {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		elem(i)
	}
	e.b = append(e.b, ']')
}

func (e *encoder) snapshot(s *Snapshot) {
	e.key(`{"at":`)
	e.int(s.At)
	e.key(`,"startedAt":`)
	e.int(s.StartedAt)
	e.key(`,"version":`)
	e.uint(s.Version)
	e.key(`,"models":`)
	list(e, s.Models == nil, len(s.Models), func(i int) { e.model(&s.Models[i]) })
	e.key(`,"schedulers":`)
	list(e, s.Schedulers == nil, len(s.Schedulers), func(i int) { e.scheduler(&s.Schedulers[i]) })
	e.key(`,"caches":`)
	list(e, s.Caches == nil, len(s.Caches), func(i int) { e.cache(&s.Caches[i]) })
	e.key(`,"requests":`)
	e.requests(&s.Requests)
	e.key(`,"series":`)
	list(e, s.Series == nil, len(s.Series), func(i int) { e.seriesPoint(&s.Series[i]) })
	e.key(`,"timeline":`)
	list(e, s.Timeline == nil, len(s.Timeline), func(i int) { e.timelinePoint(&s.Timeline[i]) })
	e.key(`,"intervalMs":`)
	e.int(s.IntervalMs)
	e.key(`,"marks":`)
	list(e, s.Marks == nil, len(s.Marks), func(i int) { e.mark(&s.Marks[i]) })
	if len(s.Sources) > 0 {
		e.key(`,"sources":`)
		list(e, false, len(s.Sources), func(i int) { e.source(&s.Sources[i]) })
	}
	e.raw("}")
}

func (e *encoder) source(s *Source) {
	e.key(`{"kind":`)
	e.string(s.Kind)
	e.key(`,"host":`)
	e.string(s.Host)
	e.key(`,"state":`)
	e.string(s.State)
	e.key(`,"since":`)
	e.int(s.Since)
	e.key(`,"failedAttempts":`)
	e.uint(s.FailedAttempts)
	if s.Error != "" {
		e.key(`,"error":`)
		e.string(s.Error)
	}
	e.raw("}")
}

func (e *encoder) model(m *Model) {
	e.key(`{"model":`)
	e.string(m.Model)
	e.key(`,"state":`)
	e.string(m.State)
	e.key(`,"loads":`)
	e.int(m.Loads)
	e.key(`,"unloads":`)
	e.int(m.Unloads)
	e.key(`,"lastLoadMs":`)
	e.optFloat(m.LastLoadMs)
	e.key(`,"lastUnloadMs":`)
	e.optFloat(m.LastUnloadMs)
	e.key(`,"lastUnloadReason":`)
	e.optString(m.LastUnloadReason)
	e.key(`,"swaps":`)
	e.int(m.Swaps)
	e.key(`,"lastSwapMs":`)
	e.optFloat(m.LastSwapMs)
	e.key(`,"weightsBytes":`)
	e.int(m.WeightsBytes)
	e.key(`,"kvBytes":`)
	e.int(m.KVBytes)
	e.key(`,"prefixCacheBytes":`)
	e.int(m.PrefixCacheBytes)
	e.key(`,"lastError":`)
	e.optString(m.LastError)
	e.key(`,"updatedAt":`)
	e.int(m.UpdatedAt)
	e.raw("}")
}

func (e *encoder) scheduler(s *Scheduler) {
	e.key(`{"model":`)
	e.string(s.Model)
	e.key(`,"active":`)
	e.int(int64(s.Active))
	e.key(`,"capacity":`)
	e.int(int64(s.Capacity))
	e.key(`,"queued":`)
	e.int(int64(s.Queued))
	e.key(`,"tokensPerSecond":`)
	e.float(s.TokensPerSecond)
	e.key(`,"at":`)
	e.int(s.At)
	e.raw("}")
}

func (e *encoder) cache(c *Cache) {
	e.key(`{"model":`)
	e.string(c.Model)
	e.key(`,"kv":`)
	if kv := c.KV; kv == nil {
		e.raw("null")
	} else {
		e.key(`{"at":`)
		e.int(kv.At)
		e.key(`,"bytes":`)
		e.int(kv.Bytes)
		e.key(`,"capacityBytes":`)
		e.optInt(kv.CapacityBytes)
		if kv.UsageRatio != nil {
			e.key(`,"usageRatio":`)
			e.optFloat(kv.UsageRatio)
		}
		e.raw("}")
	}
	e.key(`,"prefix":`)
	if p := c.Prefix; p == nil {
		e.raw("null")
	} else {
		e.key(`{"at":`)
		e.int(p.At)
		e.key(`,"bytes":`)
		e.int(p.Bytes)
		e.key(`,"capacityBytes":`)
		e.optInt(p.CapacityBytes)
		e.key(`,"hits":`)
		e.int(p.Hits)
		e.key(`,"misses":`)
		e.int(p.Misses)
		e.key(`,"hitRate":`)
		e.optFloat(p.HitRate)
		if p.UsageRatio != nil {
			e.key(`,"usageRatio":`)
			e.optFloat(p.UsageRatio)
		}
		e.raw("}")
	}
	e.raw("}")
}

func (e *encoder) requests(r *Requests) {
	e.key(`{"finished":`)
	e.int(r.Finished)
	e.key(`,"byFinish":`)
	if r.ByFinish == nil {
		e.raw("null")
	} else {
		e.finishTotals(r.ByFinish)
	}
	e.key(`,"window":`)
	e.window(&r.Window)
	e.key(`,"recent":`)
	list(e, r.Recent == nil, len(r.Recent), func(i int) { e.recent(&r.Recent[i]) })
	e.raw("}")
}

func (e *encoder) window(w *Window) {
	e.key(`{"size":`)
	e.int(int64(w.Size))
	e.key(`,"count":`)
	e.int(int64(w.Count))
	e.key(`,"queueMs":`)
	e.distribution(w.QueueMs)
	e.key(`,"ttftMs":`)
	e.distribution(w.TTFTMs)
	e.key(`,"prefillTokensPerSecond":`)
	e.distribution(w.PrefillTokensPerSecond)
	e.key(`,"decodeTokensPerSecond":`)
	e.distribution(w.DecodeTokensPerSecond)
	e.key(`,"totalMs":`)
	e.distribution(w.TotalMs)
	e.key(`,"tpotMs":`)
	e.distribution(w.TPOTMs)
	e.key(`,"cachedPromptShare":`)
	e.optFloat(w.CachedPromptShare)
	e.key(`,"lengths":`)
	e.lengths(w.Lengths)
	if len(w.PerModel) > 0 {
		keys := make([]string, 0, len(w.PerModel))
		for k := range w.PerModel {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		e.key(`,"perModel":{`)
		for i, k := range keys {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.string(k)
			e.b = append(e.b, ':')
			if pw := w.PerModel[k]; pw == nil {
				e.raw("null")
			} else {
				e.window(pw)
			}
		}
		e.b = append(e.b, '}')
	}
	e.raw("}")
}

func (e *encoder) distribution(d *Distribution) {
	if d == nil {
		e.raw("null")
		return
	}
	e.key(`{"count":`)
	e.int(int64(d.Count))
	e.key(`,"mean":`)
	e.float(d.Mean)
	e.key(`,"p50":`)
	e.float(d.P50)
	e.key(`,"p95":`)
	e.float(d.P95)
	e.key(`,"p99":`)
	e.float(d.P99)
	e.key(`,"max":`)
	e.float(d.Max)
	e.key(`,"min":`)
	e.float(d.Min)
	e.key(`,"p1":`)
	e.float(d.P1)
	e.key(`,"p5":`)
	e.float(d.P5)
	e.raw("}")
}

func (e *encoder) recent(r *Recent) {
	e.key(`{"model":`)
	e.string(r.Model)
	e.key(`,"requestId":`)
	e.string(r.RequestID)
	e.key(`,"finish":`)
	e.string(string(r.Finish))
	e.key(`,"promptTokens":`)
	e.int(r.PromptTokens)
	e.key(`,"cachedPromptTokens":`)
	e.int(r.CachedPromptTokens)
	e.key(`,"completionTokens":`)
	e.int(r.CompletionTokens)
	e.key(`,"queueMs":`)
	e.optFloat(r.QueueMs)
	e.key(`,"ttftMs":`)
	e.optFloat(r.TTFTMs)
	e.key(`,"prefillTokensPerSecond":`)
	e.optFloat(r.PrefillTokensPerSecond)
	e.key(`,"decodeTokensPerSecond":`)
	e.optFloat(r.DecodeTokensPerSecond)
	e.key(`,"totalMs":`)
	e.float(r.TotalMs)
	e.key(`,"at":`)
	e.int(r.At)
	e.raw("}")
}

func (e *encoder) seriesPoint(p *SeriesPoint) {
	e.key(`{"at":`)
	e.int(p.At)
	e.key(`,"tokensPerSecond":`)
	e.float(p.TokensPerSecond)
	e.key(`,"active":`)
	e.int(int64(p.Active))
	e.key(`,"capacity":`)
	e.int(int64(p.Capacity))
	e.key(`,"queued":`)
	e.int(int64(p.Queued))
	e.raw("}")
}

func (e *encoder) timelinePoint(p *TimelinePoint) {
	e.key(`{"at":`)
	e.int(p.At)
	e.key(`,"requests":`)
	e.int(int64(p.Requests))
	e.key(`,"byFinish":{"stop":`)
	e.int(int64(p.ByFinish.Stop))
	e.key(`,"length":`)
	e.int(int64(p.ByFinish.Length))
	e.key(`,"cancelled":`)
	e.int(int64(p.ByFinish.Cancelled))
	e.key(`,"error":`)
	e.int(int64(p.ByFinish.Error))
	e.key(`},"ttftMs":`)
	e.quantiles(p.TTFTMs)
	e.key(`,"tpotMs":`)
	e.quantiles(p.TPOTMs)
	e.key(`,"totalMs":`)
	e.quantiles(p.TotalMs)
	e.key(`,"queueMs":`)
	e.quantiles(p.QueueMs)
	e.key(`,"prefillMs":`)
	e.quantiles(p.PrefillMs)
	e.key(`,"decodeMs":`)
	e.quantiles(p.DecodeMs)
	e.key(`,"promptTokens":`)
	e.int(p.PromptTokens)
	e.key(`,"generationTokens":`)
	e.int(p.GenerationTokens)
	e.key(`,"kvUsage":`)
	e.optFloat(p.KVUsage)
	e.key(`,"prefixHitRate":`)
	e.optFloat(p.PrefixHitRate)
	e.key(`,"scheduler":`)
	if sc := p.Scheduler; sc == nil {
		e.raw("null")
	} else {
		e.key(`{"samples":`)
		e.int(int64(sc.Samples))
		e.key(`,"tokensPerSecond":`)
		e.float(sc.TokensPerSecond)
		e.key(`,"active":`)
		e.int(int64(sc.Active))
		e.key(`,"capacity":`)
		e.int(int64(sc.Capacity))
		e.key(`,"queued":`)
		e.int(int64(sc.Queued))
		e.raw("}")
	}
	e.key(`,"minute":`)
	if m := p.Minute; m == nil {
		e.raw("null")
	} else {
		e.key(`{"requests":`)
		e.int(int64(m.Requests))
		e.key(`,"ttftMs":`)
		e.quantiles(m.TTFTMs)
		e.key(`,"tpotMs":`)
		e.quantiles(m.TPOTMs)
		e.key(`,"totalMs":`)
		e.quantiles(m.TotalMs)
		e.key(`,"queueMs":`)
		e.quantiles(m.QueueMs)
		e.key(`,"prefixHitRate":`)
		e.optFloat(m.PrefixHitRate)
		e.raw("}")
	}
	e.raw("}")
}

func (e *encoder) quantiles(q *Quantiles) {
	if q == nil {
		e.raw("null")
		return
	}
	e.key(`{"p50":`)
	e.float(q.P50)
	e.key(`,"p95":`)
	e.float(q.P95)
	e.key(`,"p99":`)
	e.float(q.P99)
	e.raw("}")
}

func (e *encoder) mark(m *ModelMark) {
	e.key(`{"at":`)
	e.int(m.At)
	e.key(`,"model":`)
	e.string(m.Model)
	e.key(`,"kind":`)
	e.string(m.Kind)
	e.key(`,"ms":`)
	e.optFloat(m.Ms)
	e.raw("}")
}

// finishTotals writes f's keys in the anchor's order (FinishTotals).
func (e *encoder) finishTotals(f FinishTotals) {
	e.b = append(e.b, '{')
	for i, k := range f.Keys() {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.string(string(k))
		e.b = append(e.b, ':')
		e.int(f[k])
	}
	e.b = append(e.b, '}')
}

func (e *encoder) lengths(l *Lengths) {
	if l == nil {
		e.raw("null")
		return
	}
	e.key(`{"bounds":`)
	list(e, l.Bounds == nil, len(l.Bounds), func(i int) { e.int(l.Bounds[i]) })
	e.key(`,"prompt":`)
	list(e, l.Prompt == nil, len(l.Prompt), func(i int) { e.int(int64(l.Prompt[i])) })
	e.key(`,"generation":`)
	list(e, l.Generation == nil, len(l.Generation), func(i int) { e.int(int64(l.Generation[i])) })
	e.raw("}")
}
