package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// MaxLineBytes bounds one encoded event. Real events are a few hundred
// bytes; anything near this is a broken or hostile producer.
const MaxLineBytes = 64 << 10

// envelope is the wire form of an Event.
type envelope struct {
	Type Type            `json:"type"`
	At   *int64          `json:"at"`
	Data json.RawMessage `json:"data"`
}

// MarshalJSON writes the wire form {"type","at","data"}.
func (e Event) MarshalJSON() ([]byte, error) {
	data := []byte("{}")
	if e.Payload != nil {
		var err error
		if data, err = json.Marshal(e.Payload); err != nil {
			return nil, err
		}
	}
	at := e.At
	return json.Marshal(envelope{Type: e.Type, At: &at, Data: data})
}

// UnmarshalJSON is Parse for encoding/json users.
func (e *Event) UnmarshalJSON(b []byte) error {
	ev, err := Parse(b)
	if err != nil {
		return err
	}
	*e = ev
	return nil
}

// Error is why an event was rejected; Field names the offending field when
// there is one.
type Error struct {
	Field  string
	Reason string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

func reject(field, format string, args ...any) *Error {
	return &Error{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// required lists, per core type, the payload fields that must be present.
// A field documented as "|null" (listed in nullable) must be present but may
// be null; any other must carry a value, since encoding/json would read a
// null as zero.
var required = map[Type][]string{
	TypeModelLoad:       {"model", "phase"},
	TypeModelUnload:     {"model", "reason", "drainMs", "flushed"},
	TypeModelMemory:     {"model", "weightsBytes", "kvBytes", "prefixCacheBytes"},
	TypeRequestFinished: {"model", "requestId", "finish", "promptTokens", "cachedPromptTokens", "completionTokens", "queueMs", "ttftMs", "prefillTokensPerSecond", "decodeTokensPerSecond", "totalMs"},
	TypeSchedulerSample: {"model", "active", "capacity", "queued", "tokensPerSecond"},
	TypeCacheSample:     {"model", "cache", "bytes", "capacityBytes", "hits", "misses"},
}

var nullable = map[string]bool{
	"queueMs": true, "ttftMs": true, "prefillTokensPerSecond": true, "decodeTokensPerSecond": true,
	"capacityBytes": true, "hits": true, "misses": true,
}

// Parse decodes and validates one event. Unknown types are accepted with a
// nil Payload; core types must carry every required field with sane values.
func Parse(line []byte) (Event, error) {
	if len(line) > MaxLineBytes {
		return Event{}, reject("", "event is %d bytes, over the %d-byte limit", len(line), MaxLineBytes)
	}
	line = bytes.TrimSpace(line)
	var env envelope
	if err := json.Unmarshal(line, &env); err != nil {
		return Event{}, reject("", "not a JSON event object: %v", err)
	}
	if env.Type == "" {
		return Event{}, reject("type", "missing")
	}
	if env.At == nil {
		return Event{}, reject("at", "missing (epoch milliseconds)")
	}
	if *env.At <= 0 {
		return Event{}, reject("at", "must be positive epoch milliseconds, got %d", *env.At)
	}
	ev := Event{Type: env.Type, At: *env.At}
	fields, known := required[env.Type]
	if !known {
		return ev, nil // ignored type: valid, nothing to decode
	}
	if len(env.Data) == 0 || bytes.Equal(env.Data, []byte("null")) {
		return Event{}, reject("data", "missing payload for %s", env.Type)
	}
	if err := checkFields(env.Data, fields); err != nil {
		return Event{}, err
	}
	payload := newPayload(env.Type)
	if err := json.Unmarshal(env.Data, payload); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return Event{}, reject(te.Field, "wrong type: want %s, got JSON %s", te.Type, te.Value)
		}
		return Event{}, reject("data", "%v", err)
	}
	if err := validate(payload); err != nil {
		return Event{}, err
	}
	ev.Payload = payload
	return ev, nil
}

func newPayload(t Type) any {
	switch t {
	case TypeModelLoad:
		return new(ModelLoad)
	case TypeModelUnload:
		return new(ModelUnload)
	case TypeModelMemory:
		return new(ModelMemory)
	case TypeRequestFinished:
		return new(RequestFinished)
	case TypeSchedulerSample:
		return new(SchedulerSample)
	case TypeCacheSample:
		return new(CacheSample)
	}
	return nil
}

func validate(p any) *Error {
	switch p := p.(type) {
	case *ModelLoad:
		return firstErr(model(p.Model),
			oneOf("phase", p.Phase, PhaseStarted, PhaseFinished, PhaseFailed),
			optMs("ms", p.Ms), optBytes("weightsBytes", p.WeightsBytes))
	case *ModelUnload:
		return firstErr(model(p.Model),
			oneOf("reason", p.Reason, ReasonEvicted, ReasonRequested, ReasonIdle, ReasonFailed),
			ms("drainMs", p.DrainMs), optMs("flushMs", p.FlushMs))
	case *ModelMemory:
		return firstErr(model(p.Model), size("weightsBytes", p.WeightsBytes),
			size("kvBytes", p.KVBytes), size("prefixCacheBytes", p.PrefixCacheBytes))
	case *RequestFinished:
		err := firstErr(model(p.Model),
			oneOf("finish", p.Finish, FinishStop, FinishLength, FinishCancelled, FinishError),
			size("promptTokens", p.PromptTokens), size("cachedPromptTokens", p.CachedPromptTokens),
			size("completionTokens", p.CompletionTokens),
			optMs("queueMs", p.QueueMs), optMs("ttftMs", p.TTFTMs),
			optMs("prefillTokensPerSecond", p.PrefillTokensPerSecond),
			optMs("decodeTokensPerSecond", p.DecodeTokensPerSecond), ms("totalMs", p.TotalMs))
		if err == nil && p.CachedPromptTokens > p.PromptTokens {
			err = reject("cachedPromptTokens", "%d exceeds promptTokens %d", p.CachedPromptTokens, p.PromptTokens)
		}
		return err
	case *SchedulerSample:
		return firstErr(model(p.Model), count("active", p.Active), count("capacity", p.Capacity),
			count("queued", p.Queued), ms("tokensPerSecond", p.TokensPerSecond))
	case *CacheSample:
		return firstErr(model(p.Model), oneOf("cache", p.Cache, CacheKV, CachePrefix),
			size("bytes", p.Bytes), optBytes("capacityBytes", p.CapacityBytes),
			optBytes("hits", p.Hits), optBytes("misses", p.Misses), ratio("usageRatio", p.UsageRatio))
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

// MaxModelName bounds model names; they are ids, not prose.
const MaxModelName = 256

func model(m string) *Error {
	if m == "" {
		return reject("model", "must not be empty")
	}
	if len(m) > MaxModelName {
		return reject("model", "longer than %d bytes", MaxModelName)
	}
	return nil
}

func oneOf(field, v string, allowed ...string) *Error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return reject(field, "%q is not one of %v", v, allowed)
}

// ms checks a non-negative finite quantity (durations and rates).
func ms(field string, v float64) *Error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return reject(field, "must be a finite number >= 0, got %v", v)
	}
	return nil
}

func optMs(field string, v *float64) *Error {
	if v == nil {
		return nil
	}
	return ms(field, *v)
}

func size(field string, v int64) *Error {
	if v < 0 {
		return reject(field, "must be >= 0, got %d", v)
	}
	return nil
}

func optBytes(field string, v *int64) *Error {
	if v == nil {
		return nil
	}
	return size(field, *v)
}

// ratio checks an optional share in [0, 1].
func ratio(field string, v *float64) *Error {
	if v == nil {
		return nil
	}
	if math.IsNaN(*v) || *v < 0 || *v > 1 {
		return reject(field, "must be a number from 0 to 1, got %v", *v)
	}
	return nil
}

func count(field string, v int) *Error { return size(field, int64(v)) }

// checkFields rejects the JSON object obj when one of fields (at most 64)
// is not a key of it, or is null without being nullable. obj is known to be
// valid JSON (the envelope decoded), so a scan of its top-level keys is
// enough; it is much cheaper than decoding the object into a map.
func checkFields(obj []byte, fields []string) *Error {
	obj = bytes.TrimSpace(obj)
	if len(obj) == 0 || obj[0] != '{' {
		return reject("data", "not an object")
	}
	var seen, null uint64
	depth, expectKey := 0, false
	for i := 0; i < len(obj); i++ {
		switch c := obj[i]; c {
		case '{', '[':
			depth++
			expectKey = depth == 1
		case '}', ']':
			depth--
		case ',':
			expectKey = depth == 1
		case '"':
			j := i + 1
			for escaped := false; j < len(obj); j++ {
				if escaped {
					escaped = false
				} else if obj[j] == '\\' {
					escaped = true
				} else if obj[j] == '"' {
					break
				}
			}
			if depth == 1 && expectKey {
				key := obj[i+1 : j]
				if bytes.IndexByte(key, '\\') >= 0 {
					var k string
					if json.Unmarshal(obj[i:j+1], &k) == nil {
						key = []byte(k)
					}
				}
				for n, f := range fields {
					if string(key) == f {
						seen |= 1 << n
						if j < len(obj) && bytes.HasPrefix(bytes.TrimLeft(obj[j+1:], " \t\r\n:"), []byte("null")) {
							null |= 1 << n
						}
					}
				}
				expectKey = false
			}
			i = j
		}
	}
	for n, f := range fields {
		if seen&(1<<n) == 0 {
			return reject(f, "missing")
		}
	}
	for n, f := range fields {
		if null&(1<<n) != 0 && !nullable[f] {
			return reject(f, "must not be null")
		}
	}
	return nil
}
