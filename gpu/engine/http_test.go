package engine

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/sse"
)

func TestHTTPAnswers(t *testing.T) {
	cfg := testConfig()
	cfg.DecodeRate, cfg.PrefillRate = 5000, 1e6
	e, rec, _ := start(t, cfg)
	rec.waitFor(func(evs []events.Event) bool { return len(evs) >= 2 }) // model.load started, finished
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	tests := []struct {
		name, method, path, body string
		status                   int
		has                      []string
	}{
		{"health", "GET", "/health", "", 200, []string{`"status":"ok"`}},
		{"models", "GET", "/v1/models", "", 200, []string{`"id":"reference-sim"`}},
		{"non-stream completion", "POST", "/v1/completions", `{"model":"reference-sim","prompt":"a b c","max_tokens":3}`, 200,
			[]string{`"object":"text_completion"`, `"completion_tokens":3`, `"prompt_tokens":3`, `"finish_reason":"length"`}},
		{"non-stream chat", "POST", "/v1/chat/completions", `{"model":"reference-sim","messages":[{"role":"user","content":[{"type":"text","text":"hi there"}]}],"max_completion_tokens":2}`, 200,
			[]string{`"role":"assistant"`, `"completion_tokens":2`, `"prompt_tokens":5`}},
		{"stream completion", "POST", "/v1/completions", `{"model":"reference-sim","prompt":"a b","max_tokens":2,"stream":true}`, 200,
			[]string{`"text":" `, `"choices":[],`, `"usage":{`, "data: [DONE]\n\n"}},
		{"stream chat", "POST", "/v1/chat/completions", `{"model":"reference-sim","messages":[{"role":"user","content":"x"}],"max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`, 200,
			[]string{`"object":"chat.completion.chunk"`, `"delta":{"role":"assistant","content":""}`, `"delta":{"content":" `, `"finish_reason":"length"`, `"usage":{`, "data: [DONE]"}},
		{"unknown model", "POST", "/v1/completions", `{"model":"gpt-9","prompt":"x"}`, 404, []string{`"type":"invalid_request_error"`, "does not exist"}},
		{"missing model", "POST", "/v1/completions", `{"prompt":"x"}`, 400, []string{"model: missing"}},
		{"bad JSON", "POST", "/v1/completions", `{"model":`, 400, []string{"invalid JSON body"}},
		{"prompt of ids", "POST", "/v1/completions", `{"model":"reference-sim","prompt":[1,2]}`, 400, []string{"prompt: must be a string"}},
		{"n=2", "POST", "/v1/completions", `{"model":"reference-sim","prompt":"x","n":2}`, 400, []string{"one choice"}},
		{"zero max tokens", "POST", "/v1/completions", `{"model":"reference-sim","prompt":"x","max_tokens":0}`, 400, []string{"max_tokens"}},
		{"no messages", "POST", "/v1/chat/completions", `{"model":"reference-sim","messages":[]}`, 400, []string{"messages"}},
		{"over context", "POST", "/v1/completions", `{"model":"reference-sim","prompt":"x","max_tokens":100000}`, 400, []string{"maximum context length"}},
		{"max_tokens that overflows the sum", "POST", "/v1/completions", `{"model":"reference-sim","prompt":"x","max_tokens":9223372036854775807}`, 400, []string{"maximum context length"}},
		{"a long unknown model, quoted in part", "POST", "/v1/completions", `{"model":"` + strings.Repeat("m", 5000) + `","prompt":"x"}`, 404, []string{`"the model \"` + strings.Repeat("m", 100) + `\" does not exist`}},
		{"unknown route", "GET", "/v2/nothing", "", 404, []string{"no route GET /v2/nothing"}},
		{"wrong method", "GET", "/v1/completions", "", 405, []string{"not allowed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(context.Background(), tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, b)
			}
			for _, h := range tt.has {
				if !strings.Contains(string(b), h) {
					t.Errorf("body lacks %q:\n%s", h, b)
				}
			}
			if resp.StatusCode >= 400 {
				var body struct {
					Error struct{ Message, Type string }
				}
				if json.Unmarshal(b, &body) != nil || body.Error.Message == "" {
					t.Errorf("error body not in the OpenAI format: %s", b)
				}
			}
		})
	}
}

func TestHealthWhileLoading(t *testing.T) {
	e, err := New(testConfig(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	e.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/health", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "loading") {
		t.Errorf("before Run: %d %s", rec.Code, rec.Body)
	}
}

// A stream's usage chunk carries server_timing: when the handler got the
// request and when it had flushed the first token, in wall-clock Unix
// nanoseconds, ordered and within the request's span.
func TestServerTiming(t *testing.T) {
	cfg := testConfig()
	cfg.DecodeRate, cfg.PrefillRate = 5000, 1e6
	e, rec, _ := start(t, cfg)
	rec.waitFor(func(evs []events.Event) bool { return len(evs) >= 2 })
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	tests := []struct{ name, path, body string }{
		{"completions, several tokens", "/v1/completions", `{"model":"reference-sim","prompt":"a b","max_tokens":4,"stream":true}`},
		{"completions, one token", "/v1/completions", `{"model":"reference-sim","prompt":"a b","max_tokens":1,"stream":true}`},
		{"chat", "/v1/chat/completions", `{"model":"reference-sim","messages":[{"role":"user","content":"x"}],"max_tokens":3,"stream":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := time.Now().UnixNano()
			resp, err := http.Post(srv.URL+tt.path, "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			var timing *serverTiming
			var events int
			rd := sse.NewReader(resp.Body, sse.Options{})
			for {
				ev, err := rd.Next()
				if err != nil {
					break
				}
				events++
				var ch struct {
					ServerTiming *serverTiming `json:"server_timing"`
				}
				if json.Unmarshal(ev.Data, &ch) == nil && ch.ServerTiming != nil {
					timing = ch.ServerTiming
				}
			}
			resp.Body.Close()
			after := time.Now().UnixNano()
			if timing == nil {
				t.Fatalf("no server_timing in %d events", events)
			}
			if !(before <= timing.ReceivedUnixNs && timing.ReceivedUnixNs <= timing.FirstTokenUnixNs && timing.FirstTokenUnixNs <= after) {
				t.Errorf("server_timing %+v not within [%d, %d] in order", timing, before, after)
			}
		})
	}
}
