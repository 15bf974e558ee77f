package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFront sends a streamed completion through the front to a stand-in
// for ollama's native API: the client reads OpenAI's stream as ollama's
// own OpenAI layer writes it, and the front keeps the last line's timing.
func TestFront(t *testing.T) {
	native := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/generate" {
			http.Error(w, `{"error":"not here"}`, http.StatusNotFound)
			return
		}
		var req struct {
			Prompt string `json:"prompt"`
			Stream *bool  `json:"stream"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if req.Prompt != "the time" || req.Stream == nil || !*req.Stream {
			http.Error(w, `{"error":"not the request sent"}`, http.StatusBadRequest)
			return
		}
		io.WriteString(w, `{"model":"tiny","response":"a","done":false}`+"\n")
		io.WriteString(w, `{"model":"tiny","response":"b","done":false}`+"\n")
		io.WriteString(w, `{"model":"tiny","response":"","done":true,"done_reason":"length","total_duration":9000000,"prompt_eval_count":2,"prompt_eval_duration":4000000,"eval_count":2,"eval_duration":3000000}`+"\n")
	}))
	defer native.Close()
	up, _ := url.Parse(native.URL)
	path := filepath.Join(t.TempDir(), "timings.ndjson")
	f, _ := os.Create(path)
	front := httptest.NewServer(handler(up, &timings{w: bufio.NewWriter(f)}))
	defer front.Close()

	resp, err := http.Post(front.URL+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"tiny","prompt":"the time","max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got := string(body)
	for _, want := range []string{`"text":"a"`, `"text":"b"`, `"finish_reason":"length"`, `"completion_tokens":2`, "data: [DONE]"} {
		if !strings.Contains(got, want) {
			t.Errorf("the stream lacks %s:\n%s", want, got)
		}
	}
	f.Close()
	b, _ := os.ReadFile(path)
	var x Timing
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatalf("timings %q: %v", b, err)
	}
	if x.Endpoint != "/v1/completions" || x.Status != 200 || x.Done != "length" || x.PromptEvalDuration != 4000000 || x.EvalCount != 2 || x.TotalDuration != 9000000 {
		t.Errorf("timing %+v", x)
	}
}
