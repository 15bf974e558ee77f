package proxy

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// FuzzMeter: whatever a client sends and an upstream answers (an event
// stream or one JSON body, cut anywhere), the meter's usage and chunk
// parsing never panics, reads the same however the bytes are split, and
// builds a request.finished whose model and id are valid UTF-8 within
// their bounds and whose token counts are within theirs, cached within
// prompt.
func FuzzMeter(f *testing.F) {
	sse := "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":4,\"prompt_tokens_details\":{\"cached_tokens\":3}}}\n\n" +
		"data: [DONE]\n\n"
	whole := `{"id":"c2","model":"m","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`
	for _, seed := range []struct {
		request, answer string
		sse             bool
		status          int
	}{
		{`{"model":"qwen3-8b","stream":true}`, sse, true, 200},
		{`{"model":"qwen3-8b"}`, whole, false, 200},
		{`{"model":"m"}`, `{"error":{"message":"no such model"}}`, false, 404},
		{`not json`, "data: {\"usage\":{\"prompt_tokens\":-5,\"completion_tokens\":-1,\"prompt_tokens_details\":{\"cached_tokens\":99}}}\n", true, 200},
		{`{"model":"\xff\xfe"}`, "data: {\"usage\":{\"prompt_tokens\":1e30}}\r\ndata: {\"error\":null}\n", true, 200},
		{`{"model":5}`, "data:" + `{"choices":[{"delta":{"tool_calls":[{}]}}]}` + "\n", true, 0},
		{``, `{"usage":{"completion_tokens":9223372036854775807}}`, false, 200},
		{`{"model":"m"}`, `{"id":"` + strings.Repeat("é", events.MaxRequestID) + `","usage":{"prompt_tokens":1099511627776}}`, false, 200},
	} {
		f.Add([]byte(seed.request), []byte(seed.answer), seed.sse, seed.status, uint16(len(seed.answer)/2))
	}
	start := time.UnixMilli(1_764_690_000_000)
	f.Fuzz(func(t *testing.T, request, answer []byte, sse bool, status int, split uint16) {
		measure := func(pieces ...[]byte) events.Event {
			m := newMeter(start, request)
			m.sse = sse
			for _, p := range pieces { // at one time: only the cut differs
				m.write(p, start.Add(time.Millisecond))
			}
			return m.event(outcome{end: start.Add(time.Second), status: status}, "proxy-1")
		}
		k := int(split) % (len(answer) + 1)
		ev := measure(answer)
		if again := measure(answer[:k], answer[k:]); !reflect.DeepEqual(ev, again) {
			t.Fatalf("cut at %d, the meter read\n%+v\nnot\n%+v", k, again.Payload, ev.Payload)
		}
		p := ev.Payload.(*events.RequestFinished)
		if !utf8.ValidString(p.Model) || len(p.Model) > events.MaxModelName {
			t.Fatalf("model %q", p.Model)
		}
		if !utf8.ValidString(p.RequestID) || p.RequestID == "" || len(p.RequestID) > events.MaxRequestID {
			t.Fatalf("request id %q", p.RequestID)
		}
		if p.PromptTokens < 0 || p.CompletionTokens < 0 || p.CachedPromptTokens < 0 || p.CachedPromptTokens > p.PromptTokens ||
			p.PromptTokens > events.MaxTokens || p.CompletionTokens > events.MaxTokens {
			t.Fatalf("token counts %+v", p)
		}
		if _, err := json.Marshal(ev); err != nil {
			t.Fatalf("the event does not encode: %v", err)
		}
	})
}
