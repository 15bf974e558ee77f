package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

func TestRuleNear(t *testing.T) {
	r := rule{fraction: 0.05, floorMs: 10}
	tests := []struct {
		name string
		a, b float64
		ok   bool
	}{
		{"equal", 100, 100, true},
		{"a long time within the fraction", 1040, 1000, true},
		{"a long time past it", 1060, 1000, false},
		{"a long time short of it", 940, 1000, false},
		{"a short time past the fraction, within the floor", 12, 3, true},
		{"a short time past both", 14, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.near(tt.a, tt.b); got != tt.ok {
				t.Errorf("near(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.ok)
			}
		})
	}
}

// sameRun is a run's single-request phases as the runner records them,
// with the front's timing and ollama's log of each request that agree.
func sameRun() (bench.RunRecord, []timed, []string) {
	samples := []bench.Sample{
		{Phase: bench.PhaseDecode, Run: 1, Endpoint: "/v1/completions", CompletionTokens: 129, TTFTMs: 60, TotalMs: 640, DecodeTokensPerSecond: 220},
		{Phase: bench.PhaseColdTTFT, Run: 1, Endpoint: "/v1/completions", CompletionTokens: 8, TTFTMs: 900, TotalMs: 930},
		{Phase: bench.PhaseWarmTTFT, Run: 1, Endpoint: "/v1/completions", CompletionTokens: 8, TTFTMs: 8, TotalMs: 60},
		{Phase: bench.PhaseLongContext, Run: 1, Endpoint: "/v1/chat/completions", CompletionTokens: 33, TTFTMs: 5700, TotalMs: 5860, DecodeTokensPerSecond: 200},
		{Phase: bench.PhaseConcurrent, Run: 1, Endpoint: "/v1/chat/completions"},
	}
	rec := bench.RunRecord{ID: "r", Cells: []bench.CellResult{{Key: "k", Samples: samples}}}
	ms := func(v float64) int64 { return int64(v * 1e6) }
	times := []timed{
		{Endpoint: "/v1/completions", Status: 200, TotalDuration: ms(639), PromptEvalDuration: ms(50), EvalCount: 129, EvalDuration: ms(580)},
		{Endpoint: "/v1/completions", Status: 200, TotalDuration: ms(929), PromptEvalDuration: ms(890), EvalCount: 8, EvalDuration: ms(31)},
		{Endpoint: "/v1/completions", Status: 200, TotalDuration: ms(80), PromptEvalDuration: ms(60), EvalCount: 8, EvalDuration: ms(20)}, // the priming
		{Endpoint: "/v1/completions", Status: 200, TotalDuration: ms(59), PromptEvalDuration: ms(5), EvalCount: 8, EvalDuration: ms(52)},
		{Endpoint: "/v1/chat/completions", Status: 200, TotalDuration: ms(5859), PromptEvalDuration: ms(5690), EvalCount: 33, EvalDuration: ms(161)},
	}
	var log []string
	for _, t := range times {
		log = append(log, fmt.Sprintf(`[GIN] 2026/12/07 - 20:25:38 | 200 | %dns | 127.0.0.1 | POST "%s"`, t.TotalDuration, native(t.Endpoint)))
	}
	return rec, times, log
}

func TestSameRequests(t *testing.T) {
	tests := []struct {
		name   string
		change func(*bench.RunRecord, []timed, []string)
		want   string // a part of the error; "" for none
	}{
		{"every request agrees", func(*bench.RunRecord, []timed, []string) {}, ""},
		{"a whole time past the rule", func(r *bench.RunRecord, _ []timed, _ []string) { r.Cells[0].Samples[1].TotalMs = 1000 },
			"cold-ttft 1: 1000.0 ms in the run, 929.0 ms by ollama's log"},
		{"a TTFT past the rule", func(r *bench.RunRecord, _ []timed, _ []string) { r.Cells[0].Samples[0].TTFTMs = 80 },
			"decode 1: TTFT 80.0 ms in the run, 59.0 ms by ollama"},
		{"a TTFT within the tokens' floor", func(r *bench.RunRecord, _ []timed, _ []string) { r.Cells[0].Samples[0].TTFTMs = 75 }, ""},
		{"a TTFT shorter than the prompt's evaluation", func(r *bench.RunRecord, _ []timed, _ []string) { r.Cells[0].Samples[2].TTFTMs = 4 },
			"warm-ttft 1: TTFT 4.0 ms in the run, shorter than ollama's prompt evaluation 5.0 ms"},
		{"a decode rate off", func(r *bench.RunRecord, _ []timed, _ []string) { r.Cells[0].Samples[3].DecodeTokensPerSecond = 150 },
			"long-context 1: first to last token 213.3 ms in the run (150.0 tok/s), 161.0 ms by ollama"},
		{"a decode rate unmeasured", func(r *bench.RunRecord, _ []timed, _ []string) { r.Cells[0].Samples[0].DecodeTokensPerSecond = 0 },
			"decode 1: first to last token 0.0 ms"},
		{"the file is another run's", func(_ *bench.RunRecord, ts []timed, _ []string) { ts[4].Endpoint = "/v1/completions" },
			"the front's request 5 was 200 /v1/completions, want the run's long-context 1 (/v1/chat/completions)"},
		{"the log is another run's", func(_ *bench.RunRecord, _ []timed, log []string) {
			log[0] = strings.Replace(log[0], "/api/generate", "/api/chat", 1)
		},
			"ollama's request 1 was 200 /api/chat, want the run's decode 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, times, log := sameRun()
			tt.change(&rec, times, log)
			dir := t.TempDir()
			var b strings.Builder
			for _, x := range times {
				j, _ := json.Marshal(x)
				b.Write(append(j, '\n'))
			}
			tp, lp := filepath.Join(dir, "timings.ndjson"), filepath.Join(dir, "ollama.log")
			os.WriteFile(tp, []byte(b.String()), 0o644)
			os.WriteFile(lp, []byte(strings.Join(log, "\n")), 0o644)
			err := sameRequests(rec, lp, tp, rule{fraction: 0.05, floorMs: 10}, rule{fraction: 0.05, floorMs: 20})
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
		})
	}
}

func TestSameRequestsShortFiles(t *testing.T) {
	rec, times, log := sameRun()
	dir := t.TempDir()
	tp, lp := filepath.Join(dir, "timings.ndjson"), filepath.Join(dir, "ollama.log")
	j, _ := json.Marshal(times[0])
	os.WriteFile(tp, append(j, '\n'), 0o644)
	os.WriteFile(lp, []byte(log[0]), 0o644)
	if err := sameRequests(rec, "", tp, rule{0.05, 10}, rule{0.05, 20}); err == nil || !strings.Contains(err.Error(), "the front timed 1 requests, want at least the run's first 5") {
		t.Errorf("short timings: %v", err)
	}
	if err := sameRequests(rec, lp, "", rule{0.05, 10}, rule{0.05, 20}); err == nil || !strings.Contains(err.Error(), "ollama's log has 1 completions requests") {
		t.Errorf("short log: %v", err)
	}
}

func TestReadTimed(t *testing.T) {
	got, err := readTimed(strings.NewReader(`{"endpoint":"/v1/completions","status":200,"total_duration":639000000,"eval_count":129,"eval_duration":580000000}` + "\n"))
	if err != nil || len(got) != 1 || got[0].EvalCount != 129 || got[0].ttftMs() != 59 || math.Abs(got[0].decodeRate()-128/0.58) > 1e-9 {
		t.Errorf("read %+v, %v", got, err)
	}
	if _, err := readTimed(strings.NewReader("{\"endpoint\":\n")); err == nil {
		t.Error("a broken line read without an error")
	}
}

// FuzzReadTimed: any file reads without a panic, and every request read
// has a rate that is a number.
func FuzzReadTimed(f *testing.F) {
	f.Add(`{"endpoint":"/v1/completions","status":200,"total_duration":639000000,"eval_count":129,"eval_duration":580000000}` + "\n")
	f.Add(`{"eval_count":1,"eval_duration":-5}` + "\n{}\n")
	f.Fuzz(func(t *testing.T, file string) {
		got, _ := readTimed(strings.NewReader(file))
		for _, x := range got {
			if r := x.decodeRate(); r < 0 || r != r {
				t.Errorf("rate %v of %+v", r, x)
			}
		}
	})
}
