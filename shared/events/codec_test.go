package events

import (
	"encoding/json"
	"errors"
	"math"
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
		// What a producer that prints floats writes (see numbers.go).
		{
			name: "whole numbers written as floats, flat",
			line: `{"type":"request.finished","at":1764690000000.4,"model":"m","requestId":"r1","finish":"stop","promptTokens":812.0,"cachedPromptTokens":0.0,"completionTokens":1.28e2,"queueMs":null,"ttftMs":null,"prefillTokensPerSecond":null,"decodeTokensPerSecond":null,"totalMs":4}`,
			want: Event{Type: TypeRequestFinished, At: 1764690000000, Payload: &RequestFinished{Model: "m", RequestID: "r1", Finish: FinishStop, PromptTokens: 812, CompletionTokens: 128, TotalMs: 4}},
		},
		{
			name: "a fractional size is rounded to the byte",
			line: `{"type":"cache.sample",` + at + `,"model":"m","cache":"kv","bytes":1536.6,"capacityBytes":2.5e9,"hits":null,"misses":null}`,
			want: Event{Type: TypeCacheSample, At: 1764690000000, Payload: &CacheSample{Model: "m", Cache: CacheKV, Bytes: 1537, CapacityBytes: i(2500000000)}},
		},
		{
			name: "fractional sizes of model.memory and model.load",
			line: `{"type":"model.memory",` + at + `,"model":"m","weightsBytes":7e8,"kvBytes":0.4,"prefixCacheBytes":3.5}`,
			want: Event{Type: TypeModelMemory, At: 1764690000000, Payload: &ModelMemory{Model: "m", WeightsBytes: 700000000, KVBytes: 0, PrefixCacheBytes: 4}},
		},
		{
			name: "rows written as floats",
			line: `{"type":"scheduler.sample",` + at + `,"model":"m","active":3.0,"capacity":8e0,"queued":0.0,"tokensPerSecond":1}`,
			want: Event{Type: TypeSchedulerSample, At: 1764690000000, Payload: &SchedulerSample{Model: "m", Active: 3, Capacity: 8, TokensPerSecond: 1}},
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
			// The host's flat form of the same event parses the same.
			if flat := flatten(t, tc.line); flat != "" {
				fromFlat, err := Parse([]byte(flat))
				if err != nil || !reflect.DeepEqual(fromFlat, tc.want) {
					t.Fatalf("flat form %s: %#v, %v", flat, fromFlat, err)
				}
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

// flatten rewrites an envelope-form core event {"type","at","data":{…}} as
// the host's flat form; "" for a line without an object payload.
func flatten(t *testing.T, line string) string {
	t.Helper()
	var env map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &env); err != nil {
		t.Fatal(err)
	}
	var data map[string]json.RawMessage
	if json.Unmarshal(env["data"], &data) != nil || data == nil {
		return ""
	}
	delete(env, "data")
	for k, v := range data {
		env[k] = v
	}
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMarshalIsFlat(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		ev   Event
		want string
	}{
		{Event{Type: TypeModelLoad, At: 1796280000000, Payload: &ModelLoad{Model: "mlx-community/Qwen3-4B-4bit", Phase: PhaseFinished, Ms: f(2400)}},
			`{"type":"model.load","at":1796280000000,"model":"mlx-community/Qwen3-4B-4bit","phase":"finished","ms":2400}`},
		{Event{Type: TypeRequestFinished, At: 1796280001000, Payload: &RequestFinished{Model: "m", RequestID: "r1", Finish: FinishStop, PromptTokens: 812, CachedPromptTokens: 768, CompletionTokens: 64, TTFTMs: f(88.1), DecodeTokensPerSecond: f(60), TotalMs: 1154}},
			`{"type":"request.finished","at":1796280001000,"model":"m","requestId":"r1","finish":"stop","promptTokens":812,"cachedPromptTokens":768,"completionTokens":64,"queueMs":null,"ttftMs":88.1,"prefillTokensPerSecond":null,"decodeTokensPerSecond":60,"totalMs":1154}`},
		{Event{Type: "catalog.changed", At: 5}, `{"type":"catalog.changed","at":5}`},
	} {
		got, err := json.Marshal(tc.ev)
		if err != nil || string(got) != tc.want {
			t.Errorf("Marshal = %s, %v\nwant %s", got, err, tc.want)
		}
	}
}

// The examples, exactly as the host publishes them.
func TestParseHostFlatEvents(t *testing.T) {
	for _, line := range []string{
		`{"type":"model.load","at":1796280000000,"model":"mlx-community/Qwen3-4B-4bit","phase":"finished","ms":2400,"weightsBytes":2263000000,"resumed":false}`,
		`{"type":"request.finished","at":1796280001000,"model":"mlx-community/Qwen3-4B-4bit","requestId":"r1","finish":"stop","promptTokens":812,"cachedPromptTokens":768,"completionTokens":64,"queueMs":null,"ttftMs":88.1,"prefillTokensPerSecond":null,"decodeTokensPerSecond":60,"totalMs":1154}`,
		`{"type":"cache.sample","at":1796280001000,"model":"mlx-community/Qwen3-4B-4bit","cache":"prefix","bytes":50331648,"capacityBytes":null,"hits":768,"misses":1737}`,
		`{"type":"model.unload","at":1796280002000,"model":"m","reason":"evicted","drainMs":12,"flushed":true,"flushMs":30}`,
		`{"type":"model.memory","at":1796280002000,"model":"m","weightsBytes":1,"kvBytes":2,"prefixCacheBytes":3}`,
		`{"type":"scheduler.sample","at":1796280002000,"model":"m","active":3,"capacity":8,"queued":1,"tokensPerSecond":120.5}`,
		`{"type":"job.state","at":1796280002000,"jobId":"j","kind":"bench-serve","status":"running"}`,
	} {
		ev, err := Parse([]byte(line))
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		// What the module writes is the same flat line, field for field.
		if ev.Payload == nil {
			continue
		}
		enc, _ := json.Marshal(ev)
		var a, b map[string]any
		_ = json.Unmarshal([]byte(line), &a)
		_ = json.Unmarshal(enc, &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("re-encoded differently:\n%s\n%s", line, enc)
		}
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
		{"zero at", `{"type":"x","at":0}`, "at", "from 1 to"},
		{"negative at", `{"type":"x","at":-5}`, "at", "from 1 to"},
		{"at past year 9999", `{"type":"x","at":253402300800000}`, "at", "from 1 to"},
		{"at as string", `{"type":"x","at":"now"}`, "", "not a JSON event object"},
		{"core type without fields", `{"type":"model.memory",` + at + `}`, "model", "missing"},
		{"data null and no fields", `{"type":"model.memory",` + at + `,"data":null}`, "model", "missing"},
		{"data not an object", `{"type":"model.memory",` + at + `,"data":[1]}`, "", "not an object"},
		{"missing field", req(strings.Replace(full, `"totalMs":5`, `"x":1`, 1)), "totalMs", "missing"},
		{"nullable field absent", req(strings.Replace(full, `"ttftMs":2,`, ``, 1)), "ttftMs", "missing"},
		{"null tokens", with(`"promptTokens":10`, `"promptTokens":null`), "promptTokens", "must not be null"},
		{"null total", with(`"totalMs":5`, `"totalMs":null`), "totalMs", "must not be null"},
		{"null flushed", `{"type":"model.unload",` + at + `,"data":{"model":"m","reason":"idle","drainMs":0,"flushed":null}}`, "flushed", "must not be null"},
		{"null bytes", `{"type":"cache.sample",` + at + `,"data":{"model":"m","cache":"kv","bytes":null,"capacityBytes":null,"hits":null,"misses":null}}`, "bytes", "must not be null"},
		{"wrong type", with(`"promptTokens":10`, `"promptTokens":"ten"`), "promptTokens", "wrong type"},
		{"fractional tokens", with(`"promptTokens":10`, `"promptTokens":10.5`), "promptTokens", "wrong type"},
		{"a wrong type beside a float size", `{"type":"model.load",` + at + `,"model":"m","phase":"finished","weightsBytes":1.5,"ms":"x"}`, "ms", "wrong type"},
		{"fractional hits", `{"type":"cache.sample",` + at + `,"model":"m","cache":"prefix","bytes":1.5,"capacityBytes":null,"hits":2.5,"misses":0}`, "hits", "wrong type"},
		{"size as text", `{"type":"cache.sample",` + at + `,"model":"m","cache":"kv","bytes":"12","capacityBytes":null,"hits":null,"misses":null}`, "bytes", "wrong type"},
		{"size past int64", `{"type":"cache.sample",` + at + `,"model":"m","cache":"kv","bytes":1e300,"capacityBytes":null,"hits":null,"misses":null}`, "bytes", "wrong type"},
		{"negative fractional size", `{"type":"cache.sample",` + at + `,"model":"m","cache":"kv","bytes":-1.5,"capacityBytes":null,"hits":null,"misses":null}`, "bytes", "from 0 to"},
		{"at under a millisecond", `{"type":"x","at":0.4}`, "at", "got 0.4"},
		{"negative tokens", with(`"completionTokens":5`, `"completionTokens":-1`), "completionTokens", "from 0 to"},
		{"negative duration", with(`"queueMs":1`, `"queueMs":-1`), "queueMs", "from 0 to"},
		{"negative rate", with(`"decodeTokensPerSecond":4`, `"decodeTokensPerSecond":-4`), "decodeTokensPerSecond", "from 0 to"},
		{"cached over prompt", with(`"cachedPromptTokens":0`, `"cachedPromptTokens":11`), "cachedPromptTokens", "exceeds"},
		{"unknown finish", with(`"finish":"stop"`, `"finish":"done"`), "finish", "not one of"},
		{"empty model", with(`"model":"m"`, `"model":""`), "model", "empty"},
		{"long model", with(`"model":"m"`, `"model":"`+strings.Repeat("m", 300)+`"`), "model", "longer"},
		{"negative size", `{"type":"model.memory",` + at + `,"data":{"model":"m","weightsBytes":-1,"kvBytes":0,"prefixCacheBytes":0}}`, "weightsBytes", "from 0 to"},
		{"unknown phase", `{"type":"model.load",` + at + `,"data":{"model":"m","phase":"halfway"}}`, "phase", "not one of"},
		{"unknown reason", `{"type":"model.unload",` + at + `,"data":{"model":"m","reason":"bored","drainMs":0,"flushed":false}}`, "reason", "not one of"},
		{"unknown cache", `{"type":"cache.sample",` + at + `,"data":{"model":"m","cache":"l2","bytes":0,"capacityBytes":null,"hits":null,"misses":null}}`, "cache", "not one of"},
		{"negative hits", `{"type":"cache.sample",` + at + `,"data":{"model":"m","cache":"prefix","bytes":0,"capacityBytes":null,"hits":-1,"misses":null}}`, "hits", "from 0 to"},
		{"usage ratio over 1", `{"type":"cache.sample",` + at + `,"data":{"model":"m","cache":"kv","bytes":0,"capacityBytes":null,"hits":null,"misses":null,"usageRatio":1.5}}`, "usageRatio", "0 to 1"},
		{"negative active", `{"type":"scheduler.sample",` + at + `,"data":{"model":"m","active":-1,"capacity":8,"queued":0,"tokensPerSecond":0}}`, "active", "from 0 to"},
		{"rate over the bound", with(`"decodeTokensPerSecond":4`, `"decodeTokensPerSecond":1e308`), "decodeTokensPerSecond", "from 0 to 1e+09"},
		{"duration over the bound", with(`"totalMs":5`, `"totalMs":2e9`), "totalMs", "from 0 to"},
		{"tokens over the bound", with(`"promptTokens":10`, `"promptTokens":9000000000`), "promptTokens", "from 0 to"},
		{"request id too long", with(`"requestId":"r"`, `"requestId":"`+strings.Repeat("r", 300)+`"`), "requestId", "longer"},
		{"empty request id", with(`"requestId":"r"`, `"requestId":""`), "requestId", "empty"},
		{"model with a newline", with(`"model":"m"`, `"model":"a\nb"`), "model", "control character"},
		{"request id with an escape", with(`"requestId":"r"`, `"requestId":"r\u001b[31m"`), "requestId", "control character"},
		{"model with a C1 control", with(`"model":"m"`, `"model":"a\u0085b"`), "model", "control character"},
		{"model with a right-to-left override", with(`"model":"m"`, `"model":"\u202eexe.live"`), "model", "bidirectional"},
		{"model not UTF-8", with(`"model":"m"`, `"model":"\xff"`), "", "not a JSON event object"},
		{"model of invalid UTF-8 bytes", with(`"model":"m"`, "\"model\":\"a\xff\xfeb\""), "", "not valid UTF-8"},
		{"a number of 60,000 digits", with(`"promptTokens":10`, `"promptTokens":`+strings.Repeat("9", 60000)), "promptTokens", "wrong type"},
		{"an at of 60,000 digits", `{"type":"x","at":` + strings.Repeat("9", 60000) + `}`, "", "not a JSON event object"},
		{"scheduler rate 1e308", `{"type":"scheduler.sample",` + at + `,"model":"m","active":1,"capacity":8,"queued":0,"tokensPerSecond":1e308}`, "tokensPerSecond", "from 0 to"},
		{"capacity over the bound", `{"type":"scheduler.sample",` + at + `,"model":"m","active":1,"capacity":9999999,"queued":0,"tokensPerSecond":1}`, "capacity", "from 0 to"},
		{"bytes over 1 PiB", `{"type":"model.memory",` + at + `,"model":"m","weightsBytes":2000000000000000000,"kvBytes":0,"prefixCacheBytes":0}`, "weightsBytes", "from 0 to"},
		{"flat: missing field", `{"type":"request.finished",` + at + `,` + strings.Replace(full, `"totalMs":5`, `"x":1`, 1) + `}`, "totalMs", "missing"},
		{"flat: field nested under another key", `{"type":"model.memory",` + at + `,"x":{"model":"m","weightsBytes":1,"kvBytes":2,"prefixCacheBytes":3}}`, "model", "missing"},
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
			if len(pe.Reason) > maxReason+len("…") { // it goes back to the client and into /healthz
				t.Errorf("reason of %d bytes, over %d", len(pe.Reason), maxReason)
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
	if err := checkFields([]byte(` "str"`), fields); err == nil || err.Reason != "not an object" {
		t.Fatalf("a string passed as an object: %v", err)
	}
}

// Check holds an event made in the process to the wire's rules.
func TestCheck(t *testing.T) {
	ok := &RequestFinished{Model: "m", RequestID: "r", Finish: FinishStop, PromptTokens: 1, TotalMs: 2}
	tooMany := *ok
	tooMany.PromptTokens = MaxTokens + 1
	unnamed := *ok
	unnamed.Model = strings.Repeat("m", MaxModelName+1)
	for _, tc := range []struct {
		name  string
		ev    Event
		field string // "" when valid
	}{
		{"valid", Event{Type: TypeRequestFinished, At: 1764690000000, Payload: ok}, ""},
		{"another type, no payload", Event{Type: "catalog.changed", At: 1764690000000}, ""},
		{"a request under no model (the bus only)", Event{Type: TypeRequestFinished, At: 1764690000000, Payload: &RequestFinished{
			RequestID: "r", Finish: FinishError, TotalMs: 2}}, ""},
		{"a request under no model, a count past its bound", Event{Type: TypeRequestFinished, At: 1764690000000, Payload: &RequestFinished{
			RequestID: "r", Finish: FinishError, PromptTokens: MaxTokens + 1, TotalMs: 2}}, "promptTokens"},
		{"a sample under no model", Event{Type: TypeSchedulerSample, At: 1764690000000, Payload: &SchedulerSample{}}, "model"},
		{"a count past its bound", Event{Type: TypeRequestFinished, At: 1764690000000, Payload: &tooMany}, "promptTokens"},
		{"a name past its bound", Event{Type: TypeRequestFinished, At: 1764690000000, Payload: &unnamed}, "model"},
		{"no time", Event{Type: TypeRequestFinished, Payload: ok}, "at"},
		// A scraped engine's counts: the bus only, checked as they are.
		{"requests sample", reqs(func(*RequestsSample) {}), ""},
		{"requests sample, no time", Event{Type: TypeRequestsSample, Payload: &RequestsSample{Model: "m"}}, "at"},
		{"requests sample under no model", reqs(func(p *RequestsSample) { p.Model = "" }), "model"},
		{"requests sample, more reasons than requests", reqs(func(p *RequestsSample) { p.ByFinish.Stop = 4 }), "byFinish"},
		{"requests sample, more cached than prompt tokens", reqs(func(p *RequestsSample) { p.CachedPromptTokens = ptr(int64(901)) }), "cachedPromptTokens"},
		{"requests sample, a count short", reqs(func(p *RequestsSample) { p.TTFTMs.Counts = p.TTFTMs.Counts[:2] }), "ttftMs"},
		{"requests sample, bounds out of order", reqs(func(p *RequestsSample) { p.TotalMs.Bounds[1] = 1 }), "totalMs"},
		{"requests sample, NaN bound", reqs(func(p *RequestsSample) { p.TotalMs.Bounds[0] = math.NaN() }), "totalMs"},
		{"requests sample, a negative count", reqs(func(p *RequestsSample) { p.TTFTMs.Counts[0] = -1 }), "ttftMs"},
		{"requests sample, counts past their bound", reqs(func(p *RequestsSample) { p.TTFTMs.Counts[0], p.TTFTMs.Counts[1] = MaxLookups, 1 }), "ttftMs"},
		{"requests sample, a negative sum", reqs(func(p *RequestsSample) { p.TTFTMs.Sum = -1 }), "ttftMs"},
		{"requests sample, too many bounds", reqs(func(p *RequestsSample) {
			p.TotalMs = &Histogram{Bounds: make([]float64, MaxBuckets+1), Counts: make([]int64, MaxBuckets+2)}
		}), "totalMs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.ev)
			var pe *Error
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.field != "" && (!errors.As(err, &pe) || pe.Field != tc.field):
				t.Fatalf("error %v, want one on %s", err, tc.field)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// reqs is a valid requests.sample changed by edit.
func reqs(edit func(*RequestsSample)) Event {
	p := &RequestsSample{Model: "m", IntervalMs: 2000, Finished: 3, ByFinish: FinishTotalsByReason{Stop: 2, Cancelled: 1},
		PromptTokens: 900, CachedPromptTokens: ptr(int64(300)), GenerationTokens: 120,
		TTFTMs:  &Histogram{Bounds: []float64{100, 1000}, Counts: []int64{1, 2, 0}, Sum: 1200},
		TotalMs: &Histogram{Bounds: []float64{300, 500, 800}, Counts: []int64{0, 1, 1, 1}, Sum: 2400}}
	edit(p)
	return Event{Type: TypeRequestsSample, At: 1764690000000, Payload: p}
}
