package engine

import (
	"net/http"
	"testing"
	"unicode/utf8"
)

// FuzzParseRequest: whatever body a client posts to either generation
// endpoint, the engine's decoder never panics and answers a request for
// its own model asking for at least one token, which Submit admits only
// within the context length, or a 400 or 404 whose message is bounded.
func FuzzParseRequest(f *testing.F) {
	for _, seed := range []string{
		`{"model":"reference-sim","prompt":"a b c","max_tokens":3}`,
		`{"model":"reference-sim","prompt":["a b"],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"reference-sim","messages":[{"role":"user","content":[{"type":"text","text":"hi there"}]}],"max_completion_tokens":2}`,
		`{"model":"reference-sim","messages":[{"role":"","content":"x"}]}`,
		`{"model":"reference-sim","prompt":"x","max_tokens":9223372036854775807}`,
		`{"model":"reference-sim","prompt":"x","max_tokens":-9223372036854775808}`,
		`{"model":"reference-sim","prompt":"x","n":2}`,
		`{"model":"gpt-9","prompt":"x"}`, `{"prompt":"x"}`, `{"model":`, ``, `null`, `[]`,
		`{"model":"reference-sim","prompt":[1,2]}`, `{"model":"reference-sim","prompt":"x"} trailing`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	cfg := testConfig()
	e, err := New(cfg, Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, chat bool) {
		g, bad := e.parseRequest(body, chat)
		if bad != nil {
			if bad.status != http.StatusBadRequest && bad.status != http.StatusNotFound {
				t.Fatalf("status %d: %s", bad.status, bad.message)
			}
			if len(bad.message) > 600 {
				t.Fatalf("unbounded message: %d bytes", len(bad.message))
			}
			return
		}
		if g.Model != cfg.Model || g.max < 1 {
			t.Fatalf("accepted model %q, max %d", g.Model, g.max)
		}
		if !utf8.ValidString(g.Model) {
			t.Fatalf("model %q", g.Model)
		}
		// Submit's check alone: no stream is opened here.
		if e.fits(len(g.prompt), g.max) == nil && (len(g.prompt) == 0 || g.max > cfg.MaxContext || len(g.prompt) > cfg.MaxContext-g.max) {
			t.Fatalf("admitted %d prompt tokens and %d to generate, past the context of %d", len(g.prompt), g.max, cfg.MaxContext)
		}
	})
}
