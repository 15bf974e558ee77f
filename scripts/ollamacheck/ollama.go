package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

type ollama struct{ base, model string }

// timing is what ollama's /api/generate says of one request (durations
// in nanoseconds).
type timing struct {
	PromptEvalCount    int64 `json:"prompt_eval_count"`
	PromptEvalDuration int64 `json:"prompt_eval_duration"`
	EvalCount          int64 `json:"eval_count"`
	EvalDuration       int64 `json:"eval_duration"`
}

func (t timing) promptMs() float64 { return float64(t.PromptEvalDuration) / 1e6 }
func (t timing) promptRate() float64 {
	return float64(t.PromptEvalCount) / (float64(t.PromptEvalDuration) / 1e9)
}
func (t timing) evalRate() float64 { return float64(t.EvalCount) / (float64(t.EvalDuration) / 1e9) }

func (o ollama) generate(ctx context.Context, prompt string, tokens int) (timing, error) {
	body, _ := json.Marshal(map[string]any{
		"model": o.model, "prompt": prompt, "raw": true, "stream": false,
		"options": map[string]any{"temperature": 0, "num_predict": tokens},
	})
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.base+"/api/generate", bytes.NewReader(body))
	if err != nil {
		return timing{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return timing{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return timing{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return timing{}, fmt.Errorf("/api/generate: %s: %s", resp.Status, b)
	}
	var t timing
	if err := json.Unmarshal(b, &t); err != nil {
		return timing{}, err
	}
	if t.EvalCount != int64(tokens) || t.EvalDuration <= 0 || t.PromptEvalDuration <= 0 {
		return t, fmt.Errorf("/api/generate: %d of %d tokens, eval %d ns, prompt eval %d ns", t.EvalCount, tokens, t.EvalDuration, t.PromptEvalDuration)
	}
	return t, nil
}

func medianOf(ts []timing, f func(timing) float64) float64 {
	var vs []float64
	for _, t := range ts {
		vs = append(vs, f(t))
	}
	return mid(vs)
}

// median is the run's median of f over a phase's measured samples; -1
// when none was.
func median(c bench.CellResult, phase string, f func(bench.Sample) float64) float64 {
	var vs []float64
	for _, s := range c.Samples {
		if s.Phase == phase && s.Error == "" && f(s) > 0 {
			vs = append(vs, f(s))
		}
	}
	if len(vs) == 0 {
		return -1
	}
	return mid(vs)
}

// mid is the median by the project's one percentile rule.
func mid(vs []float64) float64 {
	slices.Sort(vs)
	return bench.Percentile(vs, 50)
}

func ttft(s bench.Sample) float64        { return s.TTFTMs }
func decodeRate(s bench.Sample) float64  { return s.DecodeTokensPerSecond }
func prefillRate(s bench.Sample) float64 { return s.PrefillTokensPerSecond }
func aggregate(s bench.Sample) float64   { return s.AggregateTokensPerSecond }
