package events

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// FuzzParse checks, whatever the bytes: Parse does not panic; an accepted
// event encodes, in the flat form, to a line that parses to the same event;
// and every number it carries is finite and inside its bound.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"type":"model.load","at":1796280000000,"model":"m","phase":"finished","ms":2400,"weightsBytes":2263000000,"resumed":false}`,
		`{"type":"request.finished","at":1796280001000,"model":"m","requestId":"r1","finish":"stop","promptTokens":812,"cachedPromptTokens":768,"completionTokens":64,"queueMs":null,"ttftMs":88.1,"prefillTokensPerSecond":null,"decodeTokensPerSecond":60,"totalMs":1154}`,
		`{"type":"cache.sample","at":1796280001000,"model":"m","cache":"prefix","bytes":50331648,"capacityBytes":null,"hits":768,"misses":1737}`,
		`{"type":"scheduler.sample","at":1,"data":{"model":"m","active":3,"capacity":8,"queued":1,"tokensPerSecond":1e308}}`,
		`{"type":"model.unload","at":2,"data":{"model":"m","reason":"evicted","drainMs":1,"flushed":true}}`,
		`{"type":"catalog.changed","at":3}`,
		`{"type":"model.memory","at":9e15,"model":"m"}`,
		`{"type":"cache.sample","at":1796280001000.5,"model":"m","cache":"kv","bytes":1536.6,"capacityBytes":2.5e9,"hits":null,"misses":null}`,
		`{"type":"model.memory","at":1,"model":"m","weightsBytes":7e8,"kvBytes":-0.4,"prefixCacheBytes":4611686018427387904.5}`,
		`[]`, `{}`, `null`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := Parse(line)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T is not an *Error", err)
			}
			return
		}
		if ev.At <= 0 || ev.At > MaxAt {
			t.Fatalf("accepted at %d", ev.At)
		}
		checkFinite(t, reflect.ValueOf(ev.Payload))
		enc, err := json.Marshal(ev)
		if err != nil {
			t.Fatalf("accepted event does not encode: %v", err)
		}
		again, err := Parse(enc)
		if err != nil {
			t.Fatalf("re-encoded %s rejected: %v", enc, err)
		}
		if !reflect.DeepEqual(again, ev) {
			t.Fatalf("round trip changed the event:\n%#v\n%#v", ev, again)
		}
	})
}

func checkFinite(t *testing.T, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			checkFinite(t, v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			checkFinite(t, v.Field(i))
		}
	case reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > MaxTokensPerSecond {
			t.Fatalf("accepted number %v", f)
		}
	case reflect.Int, reflect.Int64:
		if n := v.Int(); n < 0 || n > MaxLookups {
			t.Fatalf("accepted integer %d", n)
		}
	}
}
