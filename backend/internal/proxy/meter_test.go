package proxy

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// The model a client names is bounded as the wire validation bounds it,
// and stays valid UTF-8 when cut.
func TestMeterModelName(t *testing.T) {
	long := strings.Repeat("a", events.MaxModelName)
	tests := []struct {
		name, model, want string
	}{
		{"as sent", "qwen3-8b", "qwen3-8b"},
		{"none: unknown", "", "unknown"},
		{"cut to the bound", long + "-extra", long},
		{"cut before a split rune", long[:events.MaxModelName-1] + "é", long[:events.MaxModelName-1]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]string{"model": tc.model})
			m := newMeter(t0, body)
			ev := m.event(outcome{end: t0, status: 200}, "proxy-1")
			got := ev.Payload.(*events.RequestFinished).Model
			if got != tc.want || !utf8.ValidString(got) {
				t.Errorf("model %q, want %q", got, tc.want)
			}
			b, _ := json.Marshal(ev)
			if _, err := events.Parse(b); err != nil {
				t.Errorf("event does not validate: %v", err)
			}
		})
	}
}

// What an upstream says is bounded as the wire bounds it, so that a request
// it served is never lost to validation: an id is cut as a model name is,
// and a token count no request could have counts as not reported.
func TestMeterBoundsTheAnswer(t *testing.T) {
	longID := strings.Repeat("c", events.MaxRequestID)
	big := int64(events.MaxTokens) + 1
	tests := []struct {
		name                                   string
		id                                     string
		prompt, cached, completion             int64
		wantID                                 string
		wantPrompt, wantCached, wantCompletion int64
	}{
		{"as sent", "chatcmpl-1", 12, 4, 3, "chatcmpl-1", 12, 4, 3},
		{"id cut to the bound", longID + "-extra", 12, 4, 3, longID, 12, 4, 3},
		{"id cut before a split rune", longID[:events.MaxRequestID-1] + "é", 12, 4, 3, longID[:events.MaxRequestID-1], 12, 4, 3},
		{"no id: the fallback", "", 12, 4, 3, "proxy-1", 12, 4, 3},
		{"counts at the bound kept", "c", events.MaxTokens, events.MaxTokens, events.MaxTokens, "c", events.MaxTokens, events.MaxTokens, events.MaxTokens},
		{"prompt over the bound: none, nor cached", "c", 1 << 40, 4, 3, "c", 0, 0, 3},
		{"completion over the bound: none", "c", 12, 4, big, "c", 12, 4, 0},
		{"cached over the bound: none", "c", 12, big, 3, "c", 12, 0, 3},
		{"cached over prompt: prompt", "c", 12, 40, 3, "c", 12, 12, 3},
		{"negative: none", "c", -1, -1, -1, "c", 0, 0, 0},
		{"control characters in the id", "chat\ncmpl\x1b1", 12, 4, 3, "chat\uFFFDcmpl\uFFFD1", 12, 4, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			answer, _ := json.Marshal(map[string]any{
				"id": tc.id, "model": "m",
				"usage": map[string]any{"prompt_tokens": tc.prompt, "completion_tokens": tc.completion,
					"prompt_tokens_details": map[string]int64{"cached_tokens": tc.cached}},
			})
			m := newMeter(t0, []byte(`{"model":"m"}`))
			m.write(answer, t0)
			ev := m.event(outcome{end: t0, status: 200}, "proxy-1")
			p := ev.Payload.(*events.RequestFinished)
			if p.RequestID != tc.wantID || p.PromptTokens != tc.wantPrompt || p.CachedPromptTokens != tc.wantCached ||
				p.CompletionTokens != tc.wantCompletion {
				t.Errorf("id %q, tokens %d/%d/%d; want %q, %d/%d/%d", p.RequestID, p.PromptTokens,
					p.CachedPromptTokens, p.CompletionTokens, tc.wantID, tc.wantPrompt, tc.wantCached, tc.wantCompletion)
			}
			b, _ := json.Marshal(ev)
			if _, err := events.Parse(b); err != nil {
				t.Errorf("event does not validate: %v", err)
			}
		})
	}
}

// Counts written as floats, or as no count could be, leave the rest of
// the answer read: its id and the counts that are whole.
func TestMeterReadsCountsAsNumbers(t *testing.T) {
	m := newMeter(t0, []byte(`{"model":"m"}`))
	m.write([]byte(`{"id":"cmpl-7","model":"m","choices":[{"finish_reason":"length"}],`+
		`"usage":{"prompt_tokens":12.0,"completion_tokens":1e30,"prompt_tokens_details":{"cached_tokens":2.5}}}`), t0)
	p := m.event(outcome{end: t0, status: 200}, "proxy-1").Payload.(*events.RequestFinished)
	if p.RequestID != "cmpl-7" || p.Finish != events.FinishLength || p.PromptTokens != 12 || p.CompletionTokens != 0 || p.CachedPromptTokens != 0 {
		t.Errorf("id %q finish %q tokens %d/%d/%d; want cmpl-7, length, 12/0/0",
			p.RequestID, p.Finish, p.PromptTokens, p.CachedPromptTokens, p.CompletionTokens)
	}
}
