package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxLineBytes bounds one encoded event. Real events are a few hundred
// bytes; anything near this is a broken or hostile producer.
const MaxLineBytes = 64 << 10

// head is what every event carries on the wire. A core event's payload
// fields sit beside type and at (the host's flat form); the older envelope
// form nests them in data, which is still read.
type head struct {
	Type Type            `json:"type"`
	At   *float64        `json:"at"` // rounded to the millisecond, as a float-printing producer may write it
	Data json.RawMessage `json:"data"`
}

// MarshalJSON writes the host's flat form {"type","at",...payload fields}.
func (e Event) MarshalJSON() ([]byte, error) {
	typ, err := json.Marshal(string(e.Type))
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 0, 256)
	buf = append(buf, `{"type":`...)
	buf = append(buf, typ...)
	buf = append(buf, `,"at":`...)
	buf = strconv.AppendInt(buf, e.At, 10)
	if e.Payload != nil {
		data, err := json.Marshal(e.Payload)
		if err != nil {
			return nil, err
		}
		if len(data) < 2 || data[0] != '{' {
			return nil, fmt.Errorf("events: %s payload does not encode as an object", e.Type)
		}
		if fields := data[1 : len(data)-1]; len(bytes.TrimSpace(fields)) > 0 {
			buf = append(buf, ',')
			buf = append(buf, fields...)
		}
	}
	return append(buf, '}'), nil
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

// maxReason bounds a rejection's reason, which may quote what the client
// sent (a number literal of any length) and goes back in the answer and
// into the health report.
const maxReason = 200

func reject(field, format string, args ...any) *Error {
	r := fmt.Sprintf(format, args...)
	if len(r) > maxReason {
		r = truncate(r, maxReason) + "…"
	}
	return &Error{Field: field, Reason: r}
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

// MaxAt bounds an event's at: the last millisecond of year 9999, past
// which epoch milliseconds stop being a date anyone can format. How far
// from now a live source may stamp its events is the ingest side's rule.
const MaxAt = 253402300799999

// Check validates an event made in the process (a scraper's mapping, a
// proxy's measurement) as Parse validates one from the wire, by parsing its
// encoding: what an engine or an upstream reports is input like any other.
// The events the wire cannot carry are checked as they are: a
// request.finished under no model (one an upstream refused), whose other
// fields are checked, and a requests.sample (a scraped engine's counts),
// which exist on the bus only.
func Check(ev Event) error {
	if p, ok := ev.Payload.(*RequestsSample); ok {
		if !(ev.At >= 1 && ev.At <= MaxAt) {
			return reject("at", "must be epoch milliseconds from 1 to %d, got %d", int64(MaxAt), ev.At)
		}
		if err := validateRequests(p); err != nil {
			return err
		}
		return nil
	}
	if p, ok := ev.Payload.(*RequestFinished); ok && p.Model == "" {
		named := *p
		named.Model = "-"
		ev.Payload = &named
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	_, err = Parse(b)
	return err
}

// Parse decodes and validates one event, in the host's flat form or the
// envelope form (payload under data). Unknown types are accepted with a nil
// Payload; core types must carry every required field with values inside
// their physical bounds (see bounds.go).
func Parse(line []byte) (Event, error) {
	if len(line) > MaxLineBytes {
		return Event{}, reject("", "event is %d bytes, over the %d-byte limit", len(line), MaxLineBytes)
	}
	line = bytes.TrimSpace(line)
	// Checked on the bytes: encoding/json would quietly turn invalid
	// sequences in a string into U+FFFD.
	if !utf8.Valid(line) {
		return Event{}, reject("", "not valid UTF-8")
	}
	var h head
	if err := json.Unmarshal(line, &h); err != nil {
		return Event{}, reject("", "not a JSON event object: %v", err)
	}
	if h.Type == "" {
		return Event{}, reject("type", "missing")
	}
	if h.At == nil {
		return Event{}, reject("at", "missing (epoch milliseconds)")
	}
	at := math.Round(*h.At)
	if !(at >= 1 && at <= MaxAt) {
		return Event{}, reject("at", "must be epoch milliseconds from 1 to %d, got %s", int64(MaxAt),
			strconv.FormatFloat(*h.At, 'f', -1, 64))
	}
	ev := Event{Type: h.Type, At: int64(at)}
	fields, known := required[h.Type]
	if !known {
		return ev, nil // ignored type: valid, nothing to decode
	}
	obj := line // flat: the payload's fields are the event's own
	if len(h.Data) > 0 && !bytes.Equal(h.Data, []byte("null")) {
		obj = h.Data // envelope
	}
	if err := checkFields(obj, fields); err != nil {
		return Event{}, err
	}
	payload := newPayload(h.Type)
	err := json.Unmarshal(obj, payload)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && strings.HasPrefix(te.Value, "number") {
		if whole, ok := wholeNumbers(obj, payload); ok {
			payload = newPayload(h.Type)
			err = json.Unmarshal(whole, payload)
		}
	}
	if err != nil {
		if errors.As(err, &te) {
			return Event{}, reject(te.Field, "wrong type: want %s, got JSON %s", te.Type, te.Value)
		}
		return Event{}, reject("", "%v", err)
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

// checkFields rejects the JSON object obj when one of fields (at most 64)
// is not a key of it, or is null without being nullable. obj is known to be
// valid JSON (the envelope decoded), so a scan of its top-level keys is
// enough; it is much cheaper than decoding the object into a map.
func checkFields(obj []byte, fields []string) *Error {
	obj = bytes.TrimSpace(obj)
	if len(obj) == 0 || obj[0] != '{' {
		return reject("", "not an object")
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
