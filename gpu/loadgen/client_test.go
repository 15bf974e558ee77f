package loadgen

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/gpu/engine"
	"github.com/mlx-bun/mlx-metrics/gpu/engine/enginetest"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// startEngine serves a real-clock reference engine on loopback.
func startEngine(tb testing.TB, edit func(*engine.Config)) *httptest.Server {
	tb.Helper()
	cfg := engine.DefaultConfig()
	cfg.LoadTime = 0
	cfg.DecodeRate, cfg.PrefillRate = 2000, 200000
	if edit != nil {
		edit(&cfg)
	}
	srv := httptest.NewServer(enginetest.Run(tb, cfg, engine.Options{}).Handler())
	tb.Cleanup(srv.Close)
	return srv
}

func TestDoAgainstEngine(t *testing.T) {
	srv := startEngine(t, nil)
	c := New(srv.URL+"/v1", Options{})
	defer c.Close()
	tests := []struct {
		name       string
		req        Request
		wantPrompt int64
		wantErr    string
	}{
		{"completions", Request{Endpoint: Completions, Model: "reference-sim", Prompt: Prompt(100, ""), MaxTokens: 20}, 100, ""},
		// chat template: role and end markers plus the assistant marker
		{"chat", Request{Endpoint: ChatCompletions, Model: "reference-sim", Prompt: Prompt(100, "n1"), MaxTokens: 20}, 103, ""},
		{"unknown model", Request{Endpoint: Completions, Model: "nope", Prompt: "hi", MaxTokens: 2}, 0, "404"},
		{"unknown endpoint", Request{Endpoint: "embeddings", Model: "reference-sim", Prompt: "hi", MaxTokens: 2}, 0, "unknown endpoint"},
		{"over the context", Request{Endpoint: Completions, Model: "reference-sim", Prompt: "hi", MaxTokens: 1 << 20}, 0, "maximum context length"},
		{"timeout", Request{Endpoint: Completions, Model: "reference-sim", Prompt: "hi", MaxTokens: 30000, Timeout: 50 * time.Millisecond}, 0, "timed out after 50ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.Do(context.Background(), tt.req)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !res.HasUsage || res.PromptTokens != tt.wantPrompt || res.CompletionTokens != 20 || res.ContentChunks != 20 {
				t.Errorf("usage %v prompt %d completion %d chunks %d", res.HasUsage, res.PromptTokens, res.CompletionTokens, res.ContentChunks)
			}
			if res.Finish != "length" || res.TTFT() <= 0 || res.DecodeTokensPerSecond() <= 0 {
				t.Errorf("finish %q ttft %v decode %v", res.Finish, res.TTFT(), res.DecodeTokensPerSecond())
			}
			// The engine's own stamps lie within the client's view of it, up
			// to the slack of stamping on two sides: the engine stamps its
			// first token after the flush, so the client may read it first.
			const slack = 5 * time.Millisecond
			share, ok := res.ClientShare()
			if !ok || !res.Start.Before(res.ServerReceived.Add(slack)) || res.ServerFirstToken.After(res.FirstToken.Add(slack)) ||
				share < -slack || share > res.TTFT()+slack {
				t.Errorf("client share %v (%v) of TTFT %v; server stamps %v, %v", share, ok, res.TTFT(), res.ServerReceived, res.ServerFirstToken)
			}
		})
	}
}

// fixedStream serves a canned SSE body, to check the parser on what real
// servers send.
func fixedStream(body string, status int) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
}

func TestReadStream(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		status     int
		wantErr    string
		wantUsage  bool
		wantChunks int
		wantCached int64
	}{
		{"chat with role chunk and usage", `data: {"id":"a","choices":[{"delta":{"role":"assistant","content":""}}]}

data: {"id":"a","choices":[{"delta":{"content":"Hi"}}]}

data: {"id":"a","choices":[{"delta":{"content":" there"},"finish_reason":"stop"}]}

data: {"id":"a","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":3}}}

data: [DONE]

`, 200, "", true, 2, 3},
		{"no usage", "data: {\"choices\":[{\"text\":\"x\"}]}\n\ndata: [DONE]\n\n", 200, "", false, 1, 0},
		{"CRLF and comments", ": ping\r\ndata: {\"choices\":[{\"text\":\"x\"}]}\r\n\r\ndata: [DONE]\r\n", 200, "", false, 1, 0},
		{"error mid-stream", "data: {\"choices\":[{\"text\":\"x\"}]}\n\ndata: {\"error\":{\"message\":\"boom\"}}\n\n", 200, "mid-stream: boom", false, 0, 0},
		{"garbage", "data: {nope\n\n", 200, "unreadable stream chunk", false, 0, 0},
		{"no text", "data: [DONE]\n\n", 200, "without generated text", false, 0, 0},
		{"http error", `{"error":{"message":"bad things"}}`, 400, "bad things", false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fixedStream(tt.body, tt.status)
			defer srv.Close()
			c := New(srv.URL, Options{})
			res, err := c.Do(context.Background(), Request{Endpoint: ChatCompletions, Model: "m", Prompt: "p", MaxTokens: 2})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.HasUsage != tt.wantUsage || res.ContentChunks != tt.wantChunks || res.CachedTokens != tt.wantCached {
				t.Errorf("got %+v", res)
			}
		})
	}
}

func TestPrompt(t *testing.T) {
	for _, n := range []int{1, 10, 1024} {
		if got := len(strings.Fields(Prompt(n, ""))); got != n {
			t.Errorf("Prompt(%d) has %d words", n, got)
		}
		if got := len(strings.Fields(Prompt(n, "nonce-1"))); got != n {
			t.Errorf("Prompt(%d, nonce) has %d words", n, got)
		}
	}
	if Prompt(50, "a") == Prompt(50, "b") || Prompt(50, "a") != Prompt(50, "a") {
		t.Error("nonces must set prompts apart, and only nonces")
	}
}

// The rates' formulas, on fixed timestamps: decode counts the tokens after
// the first over the time from the first to the last; prefill is prompt
// tokens over TTFT.
func TestResultRates(t *testing.T) {
	t0 := time.Unix(1_764_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name                string
		r                   Result
		wantDecode, wantPre float64
	}{
		{"192 tokens, 1 s apart first to last", Result{PromptTokens: 32, CompletionTokens: 192, Start: t0, FirstToken: at(20), LastToken: at(1020)}, 191, 1600},
		{"1k prompt, 8 tokens", Result{PromptTokens: 1024, CompletionTokens: 8, Start: t0, FirstToken: at(256), LastToken: at(326)}, 100, 4000},
		{"one token: no decode rate", Result{PromptTokens: 10, CompletionTokens: 1, Start: t0, FirstToken: at(5), LastToken: at(5)}, 0, 2000},
		{"all in one chunk: no decode rate", Result{PromptTokens: 10, CompletionTokens: 50, Start: t0, FirstToken: at(5), LastToken: at(5)}, 0, 2000},
		// Several tokens a chunk: the first chunk is taken to hold the mean.
		{"192 tokens in 96 chunks", Result{PromptTokens: 32, CompletionTokens: 192, ContentChunks: 96, Start: t0, FirstToken: at(20), LastToken: at(1020)}, 190, 1600},
		{"16 tokens in 2 chunks", Result{PromptTokens: 32, CompletionTokens: 16, ContentChunks: 2, Start: t0, FirstToken: at(20), LastToken: at(1020)}, 8, 1600},
		{"more chunks than tokens", Result{PromptTokens: 32, CompletionTokens: 5, ContentChunks: 9, Start: t0, FirstToken: at(20), LastToken: at(1020)}, 4, 1600},
		{"no usage: no rates", Result{Start: t0, FirstToken: at(5), LastToken: at(50)}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.DecodeTokensPerSecond(); math.Abs(got-tt.wantDecode) > 1e-9*max(1, tt.wantDecode) {
				t.Errorf("decode %v tok/s, want %v", got, tt.wantDecode)
			}
			if got := tt.r.PrefillTokensPerSecond(); math.Abs(got-tt.wantPre) > 1e-9*max(1, tt.wantPre) {
				t.Errorf("prefill %v tok/s, want %v", got, tt.wantPre)
			}
		})
	}
}

// ClientShare is TTFT minus the server's received-to-first-token time,
// only with the server's stamps; stamps out of order are not taken.
func TestClientShare(t *testing.T) {
	t0 := time.Unix(1_764_000_000, 0)
	at := func(us int) time.Time { return t0.Add(time.Duration(us) * time.Microsecond) }
	tests := []struct {
		name  string
		r     Result
		want  time.Duration
		valid bool
	}{
		{"stamped", Result{Start: at(0), FirstToken: at(10_500), ServerReceived: at(200), ServerFirstToken: at(10_200)}, 500 * time.Microsecond, true},
		{"no stamps (another server)", Result{Start: at(0), FirstToken: at(10_500)}, 0, false},
		{"no first token", Result{Start: at(0), ServerReceived: at(200), ServerFirstToken: at(10_200)}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := tt.r.ClientShare(); got != tt.want || ok != tt.valid {
				t.Errorf("ClientShare() = %v, %v; want %v, %v", got, ok, tt.want, tt.valid)
			}
		})
	}
	streams := []struct {
		name, timing string
		stamped      bool
	}{
		{"in order", `{"received_unix_ns":1764000000000200000,"first_token_unix_ns":1764000000010200000}`, true},
		{"first token before received", `{"received_unix_ns":1764000000010200000,"first_token_unix_ns":1764000000000200000}`, false},
		{"zero", `{"received_unix_ns":0,"first_token_unix_ns":0}`, false},
	}
	for _, tt := range streams {
		t.Run("stream: "+tt.name, func(t *testing.T) {
			srv := fixedStream("data: {\"choices\":[{\"text\":\"x\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1},\"server_timing\":"+tt.timing+"}\n\ndata: [DONE]\n\n", 200)
			defer srv.Close()
			res, err := New(srv.URL, Options{}).Do(context.Background(), Request{Endpoint: Completions, Model: "m", Prompt: "p", MaxTokens: 1})
			if err != nil {
				t.Fatal(err)
			}
			if stamped := !res.ServerReceived.IsZero(); stamped != tt.stamped {
				t.Errorf("stamped = %v, want %v (%v, %v)", stamped, tt.stamped, res.ServerReceived, res.ServerFirstToken)
			}
		})
	}
}

// countingTransport counts the requests a given HTTP client sends.
type countingTransport struct{ n int }

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n++
	return http.DefaultTransport.RoundTrip(r)
}

// Each option takes effect, and the zero value sends no key, reads the
// real clock and, on Linux, times chunks by their arrival stamps.
func TestOptions(t *testing.T) {
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: {\"choices\":[{\"text\":\"x\"}]}\n\ndata: [DONE]\n\n"))
	}))
	defer srv.Close()
	t0 := time.Unix(1_764_000_000, 0)
	tr := &countingTransport{}
	tests := []struct {
		name     string
		opts     Options
		wantAuth string
		fake     bool // the timings are all t0
		sent     int  // requests through tr
		stamped  bool // on Linux
	}{
		{"zero", Options{}, "", false, 0, true},
		{"api key", Options{APIKey: "s3cret"}, "Bearer s3cret", false, 0, true},
		{"clock", Options{Clock: clock.NewFake(t0)}, "", true, 0, false},
		{"http client", Options{HTTP: &http.Client{Transport: tr}}, "", false, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(srv.URL+"/", tt.opts) // the trailing slash is trimmed
			defer c.Close()
			res, err := c.Do(context.Background(), Request{Endpoint: Completions, Model: "m", Prompt: "p", MaxTokens: 1})
			if err != nil {
				t.Fatal(err)
			}
			if auth != tt.wantAuth {
				t.Errorf("Authorization %q, want %q", auth, tt.wantAuth)
			}
			if fake := res.Start.Equal(t0) && res.FirstToken.Equal(t0) && res.End.Equal(t0); fake != tt.fake || res.Start.IsZero() {
				t.Errorf("timings %v %v %v from the fake clock: %v, want %v", res.Start, res.FirstToken, res.End, fake, tt.fake)
			}
			if tt.stamped && runtime.GOOS == "linux" {
				// The first requests of a process may go unstamped
				// (untilStamped): a later one must be stamped.
				if !untilStamped(t, func() bool {
					if res.Stamped {
						return true
					}
					if res, err = c.Do(context.Background(), Request{Endpoint: Completions, Model: "m", Prompt: "p", MaxTokens: 1}); err != nil {
						t.Fatal(err)
					}
					return res.Stamped
				}) {
					t.Error("no request stamped")
				}
			} else if res.Stamped {
				t.Error("Stamped, want not")
			}
			if res.FirstToken.Before(res.Start) || res.End.Before(res.FirstToken) {
				t.Errorf("timings out of order: start %v, first token %v, end %v", res.Start, res.FirstToken, res.End)
			}
			if tr.n != tt.sent {
				t.Errorf("%d requests through the given client, want %d", tr.n, tt.sent)
			}
		})
	}
}
