package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// sent is what the openai client counted (scripts/openai-client).
type sent struct {
	Requests         int64 `json:"requests"`
	PromptTokens     int64 `json:"promptTokens"`
	CompletionTokens int64 `json:"completionTokens"`
	Chunks           int64 `json:"chunks"`
}

// checkProxy checks that serve's proxy metered every request the client
// sent through it, with the tokens the server's usage gave the client:
// the snapshot's finished requests, and the timeline's prompt and
// generation tokens (every interval of a short test is still in it).
func checkProxy(serveURL, token, clientFile string) error {
	b, err := os.ReadFile(clientFile)
	if err != nil {
		return err
	}
	var c sent
	if err := json.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("%s: %w", clientFile, err)
	}
	req, err := http.NewRequest(http.MethodGet, strings.TrimRight(serveURL, "/")+"/api/metrics/snapshot", nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("snapshot: %s", resp.Status)
	}
	var s snapshot.Snapshot
	if err := json.Unmarshal(body, &s); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	var prompt, generated int64
	for _, p := range s.Timeline {
		prompt += p.PromptTokens
		generated += p.GenerationTokens
	}
	fmt.Printf("the openai client sent %d requests (%d prompt, %d completion tokens, %d chunks); serve's proxy metered %d finished (%d prompt, %d generated tokens)\n",
		c.Requests, c.PromptTokens, c.CompletionTokens, c.Chunks, s.Requests.Finished, prompt, generated)
	if c.Requests == 0 || s.Requests.Finished != c.Requests || prompt != c.PromptTokens || generated != c.CompletionTokens {
		return fmt.Errorf("serve's proxy did not meter what the client sent")
	}
	return nil
}
