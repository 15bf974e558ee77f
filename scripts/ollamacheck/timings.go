package main

import (
	"bufio"
	"encoding/json"
	"io"
)

// timed is one request's line of scripts/ollamafront's timings file:
// ollama's own timing of a request the run sent through the front
// (durations in ns). ollama times a request at two places: its HTTP
// handler (total_duration, from the request reaching it, load_duration
// of that for loading the model) and its runner (prompt_eval_duration
// from the sequence starting to the prompt's last batch decoded, just
// before the first token is sampled; eval_duration from there to the
// last token, eval_count tokens counting the first).
type timed struct {
	Endpoint           string `json:"endpoint"`
	Status             int    `json:"status"`
	TotalDuration      int64  `json:"total_duration"`
	LoadDuration       int64  `json:"load_duration"`
	PromptEvalCount    int64  `json:"prompt_eval_count"`
	PromptEvalDuration int64  `json:"prompt_eval_duration"`
	EvalCount          int64  `json:"eval_count"`
	EvalDuration       int64  `json:"eval_duration"`
}

// ttftMs is ollama's time to first token of the request: from its
// handler to the first token sampled, the total less the generation.
func (t timed) ttftMs() float64 { return float64(t.TotalDuration-t.EvalDuration) / 1e6 }

func (t timed) promptMs() float64 { return float64(t.PromptEvalDuration) / 1e6 }

// decodeRate is the generation's rate over the gaps between its tokens:
// eval_duration starts at the first token, so it spans eval_count-1 of
// them, as the runner's rate spans the chunks after the first.
func (t timed) decodeRate() float64 {
	if t.EvalCount < 2 || t.EvalDuration <= 0 {
		return 0
	}
	return float64(t.EvalCount-1) / (float64(t.EvalDuration) / 1e9)
}

// readTimed reads the front's timings file, one request a line, in the
// order the requests ended; a line that is not one is an error.
func readTimed(r io.Reader) ([]timed, error) {
	var out []timed
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4<<10), 64<<10)
	for sc.Scan() {
		var t timed
		if err := json.Unmarshal(sc.Bytes(), &t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, sc.Err()
}
