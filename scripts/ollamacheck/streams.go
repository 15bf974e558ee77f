package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// streams checks that both OpenAI endpoints stream n tokens of printable
// text and end with the counts in a usage: what the runner needs of the
// model (tinygguf) before its figures mean anything.
func (o ollama) streams(ctx context.Context, n int) error {
	for _, chat := range []bool{false, true} {
		req := map[string]any{"model": o.model, "max_tokens": n, "temperature": 0, "stream": true,
			"stream_options": map[string]any{"include_usage": true}}
		path := "/v1/completions"
		if chat {
			path = "/v1/chat/completions"
			req["messages"] = []map[string]string{{"role": "user", "content": "the time of year"}}
		} else {
			req["prompt"] = "the time of year"
		}
		body, _ := json.Marshal(req)
		resp, err := http.Post(o.base+path, "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		var text strings.Builder
		var completion int
		done := false
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			if data == "[DONE]" {
				done = true
				continue
			}
			var c struct {
				Choices []struct {
					Text  string `json:"text"`
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
				Usage *struct {
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal([]byte(data), &c); err != nil {
				resp.Body.Close()
				return fmt.Errorf("%s: %v", path, err)
			}
			for _, ch := range c.Choices {
				text.WriteString(ch.Text + ch.Delta.Content)
			}
			if c.Usage != nil && c.Usage.CompletionTokens > 0 {
				completion = c.Usage.CompletionTokens
			}
		}
		resp.Body.Close()
		if err := sc.Err(); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		for _, r := range text.String() {
			if r < ' ' || r > '~' {
				return fmt.Errorf("%s: %q in the text: not printable ASCII", path, r)
			}
		}
		if completion != n || !done {
			return fmt.Errorf("%s: usage says %d of %d tokens, [DONE] %v", path, completion, n, done)
		}
		fmt.Printf("%s: %d tokens of printable text (%d characters), usage at the end, [DONE]\n", path, n, text.Len())
	}
	return nil
}
