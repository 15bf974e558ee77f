package proxy

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/gpu/engine"
	"github.com/mlx-bun/mlx-metrics/gpu/engine/enginetest"
	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// startEngine runs the reference engine on 127.0.0.1 and returns its URL
// and the request.finished events it publishes itself, the ground truth
// the proxy's outside measurement is checked against.
func startEngine(t *testing.T) (string, chan *events.RequestFinished) {
	t.Helper()
	cfg := engine.DefaultConfig()
	cfg.DecodeRate = 2000
	cfg.PrefillRate = 200000
	cfg.LoadTime = 0
	truth := make(chan *events.RequestFinished, 16)
	e := enginetest.Run(t, cfg, engine.Options{Sink: func(ev events.Event) {
		if p, ok := ev.Payload.(*events.RequestFinished); ok {
			truth <- p
		}
	}})
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(srv.Close)
	return srv.URL, truth
}

func TestAgainstReferenceEngine(t *testing.T) {
	engineURL, truth := startEngine(t)
	base, evs := start(t, engineURL, nil)
	tests := []struct {
		name   string
		body   string
		stream bool
	}{
		{"chat stream", `{"model":"reference-sim","stream":true,"max_tokens":24,"messages":[{"role":"user","content":"tell me a long story about a proxy"}]}`, true},
		{"completion stream", `{"model":"reference-sim","stream":true,"max_tokens":8,"prompt":"one two three four"}`, true},
		{"chat, not streamed", `{"model":"reference-sim","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := "/v1/chat/completions"
			if strings.Contains(tc.body, `"prompt"`) {
				path = "/v1/completions"
			}
			resp, err := http.Post(base+path, "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if tc.stream && !strings.HasSuffix(string(body), "data: [DONE]\n\n") {
				t.Errorf("stream does not end with [DONE]: %q", body)
			}
			var want *events.RequestFinished
			select {
			case want = <-truth:
			case <-time.After(10 * time.Second):
				t.Fatal("the engine reported no request.finished")
			}
			got := next(t, evs)
			if got.RequestID == "" || got.Model != want.Model || got.Finish != want.Finish ||
				got.PromptTokens != want.PromptTokens || got.CompletionTokens != want.CompletionTokens ||
				got.CachedPromptTokens != want.CachedPromptTokens {
				t.Errorf("proxy measured %+v\nengine reported %+v", got, want)
			}
			if tc.stream {
				// Outside the engine, TTFT includes the loopback hop.
				if got.TTFTMs == nil || *got.TTFTMs < *want.TTFTMs*0.5 || got.DecodeTokensPerSecond == nil {
					t.Errorf("TTFT/decode not measured: %+v vs engine %+v", got, want)
				}
			} else if got.TTFTMs != nil {
				t.Errorf("a non-streamed answer has no TTFT, got %v", *got.TTFTMs)
			}
			if got.TotalMs <= 0 {
				t.Errorf("totalMs = %v", got.TotalMs)
			}
		})
	}
}

func TestReferenceEngineSeesCancellation(t *testing.T) {
	engineURL, truth := startEngine(t)
	base, evs := start(t, engineURL, nil)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/completions", strings.NewReader(
		`{"model":"reference-sim","stream":true,"max_tokens":30000,"prompt":"a b c"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	select {
	case want := <-truth:
		if want.Finish != events.FinishCancelled {
			t.Errorf("engine finished the request as %q, want cancelled", want.Finish)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the engine never saw the cancellation")
	}
	if got := next(t, evs); got.Finish != events.FinishCancelled {
		t.Errorf("proxy finished the request as %q, want cancelled", got.Finish)
	}
}
