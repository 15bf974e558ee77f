package events

import (
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Physical bounds of the values a core event may carry. They sit orders of
// magnitude above any real serving host, so they only ever refuse broken or
// hostile producers, and they keep every sum the store and the exporters
// make finite: 1024 models × MaxTokensPerSecond is still an exact float64.
const (
	// MaxDurationMs bounds a duration: about 11.6 days.
	MaxDurationMs = 1e9
	// MaxTokensPerSecond bounds a rate, per request or per scheduler.
	MaxTokensPerSecond = 1e9
	// MaxBytes bounds a size: 1 PiB.
	MaxBytes = 1 << 50
	// MaxTokens bounds one request's token counts.
	MaxTokens = 1 << 30
	// MaxRows bounds a scheduler's active, capacity and queued.
	MaxRows = 1 << 20
	// MaxLookups bounds a prefix cache's running hit and miss totals
	// (2^53, the largest integer a JSON reader in a browser keeps exact).
	MaxLookups = 1 << 53
	// MaxModelName bounds model names; they are ids, not prose.
	MaxModelName = 256
	// MaxRequestID bounds request ids.
	MaxRequestID = 256
	// MaxErrorText is where a load failure's error text is cut.
	MaxErrorText = 1024
)

func validate(p any) *Error {
	switch p := p.(type) {
	case *ModelLoad:
		p.Error = truncate(p.Error, MaxErrorText)
		return firstErr(name("model", p.Model, MaxModelName),
			oneOf("phase", p.Phase, PhaseStarted, PhaseFinished, PhaseFailed),
			optNumber("ms", p.Ms, MaxDurationMs), optInt("weightsBytes", p.WeightsBytes, MaxBytes))
	case *ModelUnload:
		return firstErr(name("model", p.Model, MaxModelName),
			oneOf("reason", p.Reason, ReasonEvicted, ReasonRequested, ReasonIdle, ReasonFailed),
			number("drainMs", p.DrainMs, MaxDurationMs), optNumber("flushMs", p.FlushMs, MaxDurationMs))
	case *ModelMemory:
		return firstErr(name("model", p.Model, MaxModelName), integer("weightsBytes", p.WeightsBytes, MaxBytes),
			integer("kvBytes", p.KVBytes, MaxBytes), integer("prefixCacheBytes", p.PrefixCacheBytes, MaxBytes))
	case *RequestFinished:
		err := firstErr(name("model", p.Model, MaxModelName), name("requestId", p.RequestID, MaxRequestID),
			oneOf("finish", p.Finish, FinishStop, FinishLength, FinishCancelled, FinishError),
			integer("promptTokens", p.PromptTokens, MaxTokens), integer("cachedPromptTokens", p.CachedPromptTokens, MaxTokens),
			integer("completionTokens", p.CompletionTokens, MaxTokens),
			optNumber("queueMs", p.QueueMs, MaxDurationMs), optNumber("ttftMs", p.TTFTMs, MaxDurationMs),
			optNumber("prefillTokensPerSecond", p.PrefillTokensPerSecond, MaxTokensPerSecond),
			optNumber("decodeTokensPerSecond", p.DecodeTokensPerSecond, MaxTokensPerSecond),
			number("totalMs", p.TotalMs, MaxDurationMs))
		if err == nil && p.CachedPromptTokens > p.PromptTokens {
			err = reject("cachedPromptTokens", "%d exceeds promptTokens %d", p.CachedPromptTokens, p.PromptTokens)
		}
		return err
	case *SchedulerSample:
		return firstErr(name("model", p.Model, MaxModelName), integer("active", int64(p.Active), MaxRows),
			integer("capacity", int64(p.Capacity), MaxRows), integer("queued", int64(p.Queued), MaxRows),
			number("tokensPerSecond", p.TokensPerSecond, MaxTokensPerSecond))
	case *CacheSample:
		return firstErr(name("model", p.Model, MaxModelName), oneOf("cache", p.Cache, CacheKV, CachePrefix),
			integer("bytes", p.Bytes, MaxBytes), optInt("capacityBytes", p.CapacityBytes, MaxBytes),
			optInt("hits", p.Hits, MaxLookups), optInt("misses", p.Misses, MaxLookups), ratio("usageRatio", p.UsageRatio))
	case *RequestsSample:
		return validateRequests(p)
	}
	return nil
}

func firstErr(errs ...*Error) *Error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// name checks an id: not empty, at most max bytes of valid UTF-8.
func name(field, v string, max int) *Error {
	switch {
	case v == "":
		return reject(field, "must not be empty")
	case len(v) > max:
		return reject(field, "longer than %d bytes", max)
	case !utf8.ValidString(v):
		return reject(field, "not valid UTF-8")
	case strings.IndexFunc(v, unicode.IsControl) >= 0:
		// No id has one; a terminal or an exposition would show it raw,
		// and two names told apart only by one would share a label.
		return reject(field, "holds a control character")
	case strings.IndexFunc(v, isBidiControl) >= 0:
		// It would show the name reversed ("exe.live" for "evil.exe").
		return reject(field, "holds a bidirectional control character")
	}
	return nil
}

func isBidiControl(r rune) bool { return unicode.Is(unicode.Bidi_Control, r) }

func oneOf[T ~string](field string, v T, allowed ...T) *Error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return reject(field, "%q is not one of %v", truncate(string(v), 32), allowed)
}

// number checks a finite quantity from 0 to max (durations and rates).
func number(field string, v, max float64) *Error {
	if math.IsNaN(v) || v < 0 || v > max {
		return reject(field, "must be a number from 0 to %g, got %g", max, v)
	}
	return nil
}

func optNumber(field string, v *float64, max float64) *Error {
	if v == nil {
		return nil
	}
	return number(field, *v, max)
}

// integer checks a count or size from 0 to max.
func integer(field string, v, max int64) *Error {
	if v < 0 || v > max {
		return reject(field, "must be from 0 to %d, got %d", max, v)
	}
	return nil
}

func optInt(field string, v *int64, max int64) *Error {
	if v == nil {
		return nil
	}
	return integer(field, *v, max)
}

// ratio checks an optional share in [0, 1].
func ratio(field string, v *float64) *Error {
	if v == nil {
		return nil
	}
	if math.IsNaN(*v) || *v < 0 || *v > 1 {
		return reject(field, "must be a number from 0 to 1, got %g", *v)
	}
	return nil
}

// truncate cuts s to at most max bytes on a rune boundary.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
