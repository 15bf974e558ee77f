package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// rule is the agreement a time of a request in the run must meet with
// ollama's timing of the same request: within fraction of it, or within
// floorMs (docs/testing.md says why).
type rule struct{ fraction, floorMs float64 }

// single is one request of the run's single-request phases, in the order
// the runner sent them; s is nil for the warm phase's priming, which the
// run does not record.
type single struct {
	name     string
	endpoint string
	s        *bench.Sample
}

// singleRequests lists the requests the runner sent one at a time, in
// order: decode, cold TTFT, the warm phase's priming and runs, long
// context. They are the first completions the run sends to its server.
func singleRequests(c bench.CellResult) []single {
	var out []single
	for _, ph := range []string{bench.PhaseDecode, bench.PhaseColdTTFT, bench.PhaseWarmTTFT, bench.PhaseLongContext} {
		if ph == bench.PhaseWarmTTFT {
			out = append(out, single{"warm-ttft priming", "/v1/completions", nil})
		}
		for i := range c.Samples {
			if s := &c.Samples[i]; s.Phase == ph {
				out = append(out, single{fmt.Sprintf("%s %d", s.Phase, s.Run), s.Endpoint, s})
			}
		}
	}
	return out
}

// native is the endpoint scripts/ollamafront sends an OpenAI one to.
func native(endpoint string) string {
	if endpoint == "/v1/chat/completions" {
		return "/api/chat"
	}
	return "/api/generate"
}

// sameRequests holds each request of the run's single-request phases to
// ollama's own timing of the same request: with logPath, its whole time
// to ollama's access log (gin's latency of it) by r; with timingsPath
// (the run went through scripts/ollamafront), by tokens its TTFT to
// ollama's handler's time to the first token and its first to last token
// to the runner's eval_duration, and its TTFT can be no shorter than
// ollama's prompt evaluation. tokens is the looser: those times hang on a
// token crossing three processes (ollama's runner, its server, the front)
// where the whole time's last byte crosses one. The run must be the first to send completions to that
// ollama, so the log's and the file's first lines are its requests.
func sameRequests(rec bench.RunRecord, logPath, timingsPath string, r, tokens rule) error {
	want := singleRequests(rec.Cells[0])
	var lines []logged
	var times []timed
	if logPath != "" {
		l, err := readFile(logPath, readGIN)
		if err != nil {
			return err
		}
		if lines = l; len(lines) < len(want) {
			return fmt.Errorf("ollama's log has %d completions requests, want at least the run's first %d", len(lines), len(want))
		}
	}
	if timingsPath != "" {
		t, err := readFile(timingsPath, readTimed)
		if err != nil {
			return err
		}
		if times = t; len(times) < len(want) {
			return fmt.Errorf("the front timed %d requests, want at least the run's first %d", len(times), len(want))
		}
	}
	var rows, bad []string
	for i, w := range want {
		if lines != nil {
			if l := lines[i]; l.status != "200" || (l.endpoint != w.endpoint && l.endpoint != native(w.endpoint)) {
				return fmt.Errorf("ollama's request %d was %s %s, want the run's %s (%s): the log is not the run's", i+1, l.status, l.endpoint, w.name, w.endpoint)
			}
		}
		if times != nil {
			if t := times[i]; t.Status != 200 || t.Endpoint != w.endpoint {
				return fmt.Errorf("the front's request %d was %d %s, want the run's %s (%s): the file is not the run's", i+1, t.Status, t.Endpoint, w.name, w.endpoint)
			}
		}
		if w.s == nil {
			continue
		}
		row := []string{w.name}
		if lines != nil {
			ms := float64(lines[i].latency) / float64(time.Millisecond)
			row = append(row, f1(w.s.TotalMs), f1(ms), fmt.Sprintf("%+.1f", w.s.TotalMs-ms))
			if !r.near(w.s.TotalMs, ms) {
				bad = append(bad, fmt.Sprintf("%s: %.1f ms in the run, %.1f ms by ollama's log", w.name, w.s.TotalMs, ms))
			}
		}
		if times != nil {
			t := times[i]
			row = append(row, f1(w.s.TTFTMs), f1(t.ttftMs()), fmt.Sprintf("%+.1f", w.s.TTFTMs-t.ttftMs()), f1(t.promptMs()))
			if !tokens.near(w.s.TTFTMs, t.ttftMs()) {
				bad = append(bad, fmt.Sprintf("%s: TTFT %.1f ms in the run, %.1f ms by ollama", w.name, w.s.TTFTMs, t.ttftMs()))
			}
			if w.s.TTFTMs < t.promptMs() {
				bad = append(bad, fmt.Sprintf("%s: TTFT %.1f ms in the run, shorter than ollama's prompt evaluation %.1f ms", w.name, w.s.TTFTMs, t.promptMs()))
			}
			if w.s.Phase == bench.PhaseDecode || w.s.Phase == bench.PhaseLongContext { // the phases that rate decoding
				o := t.decodeRate()
				row = append(row, f1(w.s.DecodeTokensPerSecond), f1(o), ratio(w.s.DecodeTokensPerSecond, o))
				// Judged as a time, as the others: the span from the first
				// token to the last, the run's from its rate (one token a
				// chunk, as ollama sends them).
				run, theirs := span(w.s.CompletionTokens, w.s.DecodeTokensPerSecond), float64(t.EvalDuration)/1e6
				if run <= 0 || !tokens.near(run, theirs) {
					bad = append(bad, fmt.Sprintf("%s: first to last token %.1f ms in the run (%.1f tok/s), %.1f ms by ollama", w.name, run, w.s.DecodeTokensPerSecond, theirs))
				}
			} else {
				row = append(row, "-", "-", "-")
			}
		}
		rows = append(rows, "| "+strings.Join(row, " | ")+" |")
	}
	printSame(rows, lines != nil, times != nil)
	if times != nil {
		concurrent(rec, times[len(want):])
	}
	if len(bad) > 0 {
		return fmt.Errorf("beyond ollama's own timing of the same request (%.0f %% or %.0f ms; TTFT and decode %.0f ms): %s",
			100*r.fraction, r.floorMs, tokens.floorMs, strings.Join(bad, "; "))
	}
	fmt.Printf("\nevery request within %.0f %% or %.0f ms of ollama's own timing of it", 100*r.fraction, r.floorMs)
	if times != nil {
		fmt.Printf("; its TTFT and first to last token within %.0f %% or %.0f ms, its TTFT no shorter than ollama's prompt evaluation", 100*tokens.fraction, tokens.floorMs)
	}
	fmt.Println()
	return nil
}

func printSame(rows []string, log, times bool) {
	head, rule := []string{"request"}, []string{"---"}
	if log {
		head = append(head, "total ms", "ollama's log", "Δ")
		rule = append(rule, "--:", "--:", "--:")
	}
	if times {
		head = append(head, "TTFT ms", "ollama's", "Δ", "prompt eval ms", "decode tok/s", "ollama's", "ratio")
		rule = append(rule, "--:", "--:", "--:", "--:", "--:", "--:", "--:")
	}
	fmt.Printf("\nThe run's requests beside ollama's own timing of the same requests (total: sent to the stream's end, ollama's\n")
	fmt.Printf("log from its handler; TTFT: ollama's from its handler to the first token, total_duration - eval_duration;\n")
	fmt.Printf("decode: ollama's (eval_count - 1) / eval_duration)\n\n")
	fmt.Println("| " + strings.Join(head, " | ") + " |")
	fmt.Println("|" + strings.Join(rule, "|") + "|")
	for _, r := range rows {
		fmt.Println(r)
	}
}

// near says a is b within the rule: the fraction of b, or the floor.
func (r rule) near(a, b float64) bool {
	d := math.Abs(a - b)
	return d <= max(r.fraction*b, r.floorMs)
}

func f1(v float64) string { return fmt.Sprintf("%.1f", v) }

func readFile[T any](path string, read func(io.Reader) ([]T, error)) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(f)
}

// span is the time from the first token to the last of a run that
// decoded tokens at rate, one token a chunk (its rate spans the gaps).
func span(tokens int64, rate float64) float64 {
	if tokens < 2 || rate <= 0 {
		return 0
	}
	return float64(tokens-1) / rate * 1e3
}

func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// concurrent prints each batch of the concurrent phase beside the sum of
// ollama's rates of its streams: the front's requests after the
// single-request phases' are the batches', a batch's streams in the
// order they ended. Shown, not judged: the run's aggregate is every
// stream's tokens over the batch's wall time, TTFTs included, so it is
// below the sum by the streams' prompt processing.
func concurrent(rec bench.RunRecord, rest []timed) {
	n := rec.Plan.Phases.Defaults().Concurrency
	for _, s := range bench.PhaseSamples(rec.Cells[0].Samples, bench.PhaseConcurrent) {
		if len(rest) < n {
			return
		}
		var sum float64
		for _, t := range rest[:n] {
			sum += t.decodeRate()
		}
		rest = rest[n:]
		fmt.Printf("concurrent %d: %d streams at once, %.1f tok/s in the run (all tokens over the batch's time); ollama's rates of the %d sum to %.1f\n",
			s.Run, n, s.AggregateTokensPerSecond, n, sum)
	}
}
