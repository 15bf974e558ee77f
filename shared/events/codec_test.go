package events

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

const at = `"at":1764690000000`

func TestParseValid(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	i := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name string
		line string
		want Event
	}{
		{
			name: "model.load finished",
			line: `{"type":"model.load",` + at + `,"data":{"model":"m","phase":"finished","ms":2400,"weightsBytes":3200000000}}`,
			want: Event{Type: TypeModelLoad, At: 1764690000000, Payload: &ModelLoad{Model: "m", Phase: PhaseFinished, Ms: f(2400), WeightsBytes: i(3200000000)}},
		},
		{
			name: "model.unload without flushMs",
			line: `{"type":"model.unload",` + at + `,"data":{"model":"m","reason":"idle","drainMs":0,"flushed":false}}`,
			want: Event{Type: TypeModelUnload, At: 1764690000000, Payload: &ModelUnload{Model: "m", Reason: ReasonIdle}},
		},
		{
			name: "model.memory",
			line: `{"type":"model.memory",` + at + `,"data":{"model":"m","weightsBytes":1,"kvBytes":2,"prefixCacheBytes":3}}`,
			want: Event{Type: TypeModelMemory, At: 1764690000000, Payload: &ModelMemory{Model: "m", WeightsBytes: 1, KVBytes: 2, PrefixCacheBytes: 3}},
		},
		{
			name: "request.finished with null timings",
			line: `{"type":"request.finished",` + at + `,"data":{"model":"m","requestId":"r1","finish":"cancelled","promptTokens":10,"cachedPromptTokens":0,"completionTokens":0,"queueMs":3.5,"ttftMs":null,"prefillTokensPerSecond":null,"decodeTokensPerSecond":null,"totalMs":4}}`,
			want: Event{Type: TypeRequestFinished, At: 1764690000000, Payload: &RequestFinished{Model: "m", RequestID: "r1", Finish: FinishCancelled, PromptTokens: 10, QueueMs: f(3.5), TotalMs: 4}},
		},
		{
			name: "scheduler.sample",
			line: `{"type":"scheduler.sample",` + at + `,"data":{"model":"m","active":3,"capacity":8,"queued":1,"tokensPerSecond":120.5}}`,
			want: Event{Type: TypeSchedulerSample, At: 1764690000000, Payload: &SchedulerSample{Model: "m", Active: 3, Capacity: 8, Queued: 1, TokensPerSecond: 120.5}},
		},
		{
			name: "cache.sample prefix",
			line: `{"type":"cache.sample",` + at + `,"data":{"model":"m","cache":"prefix","bytes":10,"capacityBytes":100,"hits":3,"misses":1}}`,
			want: Event{Type: TypeCacheSample, At: 1764690000000, Payload: &CacheSample{Model: "m", Cache: CachePrefix, Bytes: 10, CapacityBytes: i(100), Hits: i(3), Misses: i(1)}},
		},
		{
			name: "unknown fields, such as text, are dropped",
			line: `{"type":"model.memory",` + at + `,"data":{"model":"m","weightsBytes":1,"kvBytes":2,"prefixCacheBytes":3,"prompt":"secret"}}`,
			want: Event{Type: TypeModelMemory, At: 1764690000000, Payload: &ModelMemory{Model: "m", WeightsBytes: 1, KVBytes: 2, PrefixCacheBytes: 3}},
		},
		{
			name: "ignored type without data",
			line: `{"type":"catalog.changed",` + at + `}`,
			want: Event{Type: "catalog.changed", At: 1764690000000},
		},
		{
			name: "module event",
			line: `  {"type":"bench.progress",` + at + `,"data":[1,2]}  `,
			want: Event{Type: "bench.progress", At: 1764690000000},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.line))
			if err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v\nwant %#v", got, tc.want)
			}
			// Encoding and parsing again gives the same event.
			enc, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Parse(enc)
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("round trip through %s: %#v, %v", enc, again, err)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	req := func(fields string) string {
		return `{"type":"request.finished",` + at + `,"data":{` + fields + `}}`
	}
	full := `"model":"m","requestId":"r","finish":"stop","promptTokens":10,"cachedPromptTokens":0,"completionTokens":5,"queueMs":1,"ttftMs":2,"prefillTokensPerSecond":3,"decodeTokensPerSecond":4,"totalMs":5`
	with := func(old, new string) string { return req(strings.Replace(full, old, new, 1)) }
	for _, tc := range []struct {
		name  string
		line  string
		field string // the field the rejection names
		why   string // a fragment of the reason
	}{
		{"not JSON", `nope`, "", "not a JSON event object"},
		{"NaN literal", with(`"totalMs":5`, `"totalMs":NaN`), "", "not a JSON event object"},
		{"infinite number", with(`"totalMs":5`, `"totalMs":1e999`), "totalMs", ""},
		{"JSON array", `[1,2]`, "", "not a JSON event object"},
		{"missing type", `{` + at + `}`, "type", "missing"},
		{"missing at", `{"type":"x"}`, "at", "missing"},
		{"zero at", `{"type":"x","at":0}`, "at", "positive"},
		{"negative at", `{"type":"x","at":-5}`, "at", "positive"},
		{"at as string", `{"type":"x","at":"now"}`, "", "not a JSON event object"},
		{"core type without data", `{"type":"model.memory",` + at + `}`, "data", "missing payload"},
		{"data null", `{"type":"model.memory",` + at + `,"data":null}`, "data", "missing payload"},
		{"data not an object", `{"type":"model.memory",` + at + `,"data":[1]}`, "data", "not an object"},
		{"missing field", req(strings.Replace(full, `"totalMs":5`, `"x":1`, 1)), "totalMs", "missing"},
		{"nullable field absent", req(strings.Replace(full, `"ttftMs":2,`, ``, 1)), "ttftMs", "missing"},
		{"null tokens", with(`"promptTokens":10`, `"promptTokens":null`), "promptTokens", "must not be null"},
		{"null total", with(`"totalMs":5`, `"totalMs":null`), "totalMs", "must not be null"},
		{"null flushed", `{"type":"model.unload",` + at + `,"data":{"model":"m","reason":"idle","drainMs":0,"flushed":null}}`, "flushed", "must not be null"},
		{"null bytes", `{"type":"cache.sample",` + at + `,"data":{"model":"m","cache":"kv","bytes":null,"capacityBytes":null,"hits":null,"misses":null}}`, "bytes", "must not be null"},
		{"wrong type", with(`"promptTokens":10`, `"promptTokens":"ten"`), "promptTokens", "wrong type"},
		{"fractional tokens", with(`"promptTokens":10`, `"promptTokens":10.5`), "promptTokens", "wrong type"},
		{"negative tokens", with(`"completionTokens":5`, `"completionTokens":-1`), "completionTokens", ">= 0"},
		{"negative duration", with(`"queueMs":1`, `"queueMs":-1`), "queueMs", ">= 0"},
		{"negative rate", with(`"decodeTokensPerSecond":4`, `"decodeTokensPerSecond":-4`), "decodeTokensPerSecond", ">= 0"},
		{"cached over prompt", with(`"cachedPromptTokens":0`, `"cachedPromptTokens":11`), "cachedPromptTokens", "exceeds"},
		{"unknown finish", with(`"finish":"stop"`, `"finish":"done"`), "finish", "not one of"},
		{"empty model", with(`"model":"m"`, `"model":""`), "model", "empty"},
		{"long model", with(`"model":"m"`, `"model":"`+strings.Repeat("m", 300)+`"`), "model", "longer"},
		{"negative size", `{"type":"model.memory",` + at + `,"data":{"model":"m","weightsBytes":-1,"kvBytes":0,"prefixCacheBytes":0}}`, "weightsBytes", ">= 0"},
		{"unknown phase", `{"type":"model.load",` + at + `,"data":{"model":"m","phase":"halfway"}}`, "phase", "not one of"},
		{"unknown reason", `{"type":"model.unload",` + at + `,"data":{"model":"m","reason":"bored","drainMs":0,"flushed":false}}`, "reason", "not one of"},
		{"unknown cache", `{"type":"cache.sample",` + at + `,"data":{"model":"m","cache":"l2","bytes":0,"capacityBytes":null,"hits":null,"misses":null}}`, "cache", "not one of"},
		{"negative hits", `{"type":"cache.sample",` + at + `,"data":{"model":"m","cache":"prefix","bytes":0,"capacityBytes":null,"hits":-1,"misses":null}}`, "hits", ">= 0"},
		{"usage ratio over 1", `{"type":"cache.sample",` + at + `,"data":{"model":"m","cache":"kv","bytes":0,"capacityBytes":null,"hits":null,"misses":null,"usageRatio":1.5}}`, "usageRatio", "0 to 1"},
		{"negative active", `{"type":"scheduler.sample",` + at + `,"data":{"model":"m","active":-1,"capacity":8,"queued":0,"tokensPerSecond":0}}`, "active", ">= 0"},
		{"1 MB line", `{"type":"x",` + at + `,"data":"` + strings.Repeat("a", 1<<20) + `"}`, "", "over the"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := Parse([]byte(tc.line))
			if err == nil {
				t.Fatalf("accepted %#v", ev)
			}
			pe, ok := err.(*Error)
			if !ok {
				t.Fatalf("error %T %v is not an *Error", err, err)
			}
			if pe.Field != tc.field || !strings.Contains(pe.Reason, tc.why) {
				t.Fatalf("rejected as %q: %q; want field %q reason containing %q", pe.Field, pe.Reason, tc.field, tc.why)
			}
		})
	}
}

func TestUnmarshalJSONValidates(t *testing.T) {
	var evs []Event
	err := json.Unmarshal([]byte(`[{"type":"x",`+at+`},{"type":"model.memory",`+at+`,"data":{}}]`), &evs)
	if err == nil {
		t.Fatalf("decoded %#v", evs)
	}
}

func BenchmarkParse(b *testing.B) {
	line := []byte(`{"type":"request.finished",` + at + `,"data":{"model":"llama-3.2-3b","requestId":"req-00001","finish":"stop","promptTokens":812,"cachedPromptTokens":406,"completionTokens":128,"queueMs":12.5,"ttftMs":180.2,"prefillTokensPerSecond":4200.1,"decodeTokensPerSecond":55.3,"totalMs":2600.7}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(line); err != nil {
			b.Fatal(err)
		}
	}
}

func TestCheckFields(t *testing.T) {
	fields := []string{"model", "kvBytes", "hits"} // hits is nullable
	for _, tc := range []struct {
		name, obj, field, reason string
	}{
		{"all present", `{"model":"m","kvBytes":1,"hits":2}`, "", ""},
		{"nullable null", `{"model":"m","kvBytes":1,"hits": null}`, "", ""},
		{"present with null", `{"model":null,"kvBytes":null,"hits":null}`, "model", "must not be null"},
		{"null after spaces", `{"model":"m","kvBytes" : null,"hits":1}`, "kvBytes", "must not be null"},
		{"a null string is a value", `{"model":"null","kvBytes":1,"hits":1}`, "", ""},
		{"a nested null is not the field's", `{"model":"m","kvBytes":1,"hits":1,"x":{"model":null}}`, "", ""},
		{"missing before null", `{"model":null,"hits":1}`, "kvBytes", "missing"},
		{"first missing", `{"kvBytes":1,"hits":1}`, "model", "missing"},
		{"only in a nested object", `{"x":{"model":"m"},"kvBytes":1,"hits":1}`, "model", "missing"},
		{"only in a nested array", `{"x":[{"model":"m"}],"kvBytes":1,"hits":1}`, "model", "missing"},
		{"only as a value", `{"x":"model","kvBytes":1,"hits":1}`, "model", "missing"},
		{"escaped key", `{"\u006dodel":"m","kvBytes":1,"hits":1}`, "", ""},
		{"quotes and braces in strings", `{"x":"\"{model\"","model":"}","kvBytes":1,"hits":1}`, "", ""},
		{"empty object", `{}`, "model", "missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkFields([]byte(tc.obj), fields)
			var field, reason string
			if err != nil {
				field, reason = err.Field, err.Reason
			}
			if field != tc.field || reason != tc.reason {
				t.Fatalf("got %q %q, want %q %q", field, reason, tc.field, tc.reason)
			}
		})
	}
	if err := checkFields([]byte(` "str"`), fields); err == nil || err.Field != "data" {
		t.Fatalf("a string passed as an object: %v", err)
	}
}
