package loadgen

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mlx-bun/mlx-metrics/gpu/loadgen/ssetest"
)

// Streams as real servers write them, canned (fixedStream): the client's
// reading of usage and of a stream's end must hold for what they send, not
// only for the reference engine's shape.

// ollamaStream is ssetest.Ollama's whole stream.
func ollamaStream(chat bool, texts []string, finish string, prompt, completion int) string {
	return ssetest.Ollama{Chat: chat, Texts: texts, Finish: finish, Prompt: prompt, Completion: completion}.String()
}

// openAIChunk is a completions chunk with the usage given (raw JSON, or
// none when empty).
func openAIChunk(text, usage string) string {
	c := map[string]any{"id": "cmpl-1", "choices": []map[string]any{{"index": 0, "text": text}}}
	if text == "" {
		c["choices"] = []any{}
	}
	if usage != "" {
		c["usage"] = json.RawMessage(usage)
	}
	b, _ := json.Marshal(c)
	return "data: " + string(b) + "\n\n"
}

func TestRealServerStreams(t *testing.T) {
	five := []string{"ab", "cd e", "fg", "h ij", "kl"} // 12 tokens in 5 chunks
	tests := []struct {
		name              string
		endpoint          string
		body              string
		wantUsage         bool
		wantPrompt        int64
		wantCompletion    int64
		wantCached        int64
		wantCachedSaid    bool // the usage had prompt_tokens_details
		wantChunks        int
		wantFinish        string
		wantDone, wantCut bool
	}{
		{"ollama completions", Completions, ollamaStream(false, five, "length", 32, 12), true, 32, 12, 0, false, 5, "length", true, false},
		{"ollama chat", ChatCompletions, ollamaStream(true, five, "length", 35, 12), true, 35, 12, 0, false, 5, "length", true, false},
		{"ollama completions stopping early", Completions, ollamaStream(false, five[:2], "stop", 32, 5), true, 32, 5, 0, false, 2, "stop", true, false},
		// Zero usage on every chunk and the stream cut: no counts, not 0 of them.
		{"ollama completions cut short", Completions, ollamaStream(false, five, "", 0, 0), false, 0, 0, 0, false, 5, "", false, true},
		{"ollama chat cut short", ChatCompletions, ollamaStream(true, five, "", 0, 0), false, 0, 0, 0, false, 5, "", false, true},
		{"counts, then an all-zero usage", Completions, openAIChunk("a", "") + openAIChunk("b", "") +
			openAIChunk("", `{"prompt_tokens":9,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}`) +
			openAIChunk("", `{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}`) + "data: [DONE]\n\n",
			true, 9, 2, 4, true, 2, "", true, false},
		{"usage growing chunk by chunk (vLLM continuous stats)", Completions,
			openAIChunk("a", `{"prompt_tokens":9,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":4}}`) +
				openAIChunk("b", `{"prompt_tokens":9,"completion_tokens":2}`) + openAIChunk("c", `{"prompt_tokens":9,"completion_tokens":3}`) + "data: [DONE]\n\n",
			true, 9, 3, 0, false, 3, "", true, false},
		{"no [DONE] after a finish reason", Completions, openAIChunk("a", "") +
			`data: {"id":"cmpl-1","choices":[{"text":"b","finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}` + "\n\n",
			true, 3, 2, 0, false, 2, "stop", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fixedStream(tt.body, 200)
			defer srv.Close()
			c := New(srv.URL, Options{})
			defer c.Close()
			res, err := c.Do(context.Background(), Request{Endpoint: tt.endpoint, Model: "tiny", Prompt: "p", MaxTokens: 12})
			if err != nil {
				t.Fatal(err)
			}
			if res.HasUsage != tt.wantUsage || res.PromptTokens != tt.wantPrompt || res.CompletionTokens != tt.wantCompletion ||
				res.CachedTokens != tt.wantCached || res.CachedReported != tt.wantCachedSaid {
				t.Errorf("usage %v: %d prompt, %d completion, %d cached (reported %v); want %v: %d, %d, %d (%v)",
					res.HasUsage, res.PromptTokens, res.CompletionTokens, res.CachedTokens, res.CachedReported,
					tt.wantUsage, tt.wantPrompt, tt.wantCompletion, tt.wantCached, tt.wantCachedSaid)
			}
			if res.ContentChunks != tt.wantChunks || res.Finish != tt.wantFinish || res.Done != tt.wantDone || res.Cut() != tt.wantCut {
				t.Errorf("%d chunks, finish %q, done %v, cut %v; want %d, %q, %v, %v",
					res.ContentChunks, res.Finish, res.Done, res.Cut(), tt.wantChunks, tt.wantFinish, tt.wantDone, tt.wantCut)
			}
		})
	}
}
