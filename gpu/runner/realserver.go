package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mlx-bun/mlx-metrics/gpu/loadgen"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/plural"
)

// Real servers stop before max_tokens (ignore_eos is vLLM's and SGLang's
// alone), send several tokens a chunk, truncate a prompt to their context,
// cut a stream short or answer a request with an error. A stream is
// recorded as what happened: measured with a note when it has usage, an
// error on its own sample when not, and a phase goes on past it (tally).

var errNoUsage = errors.New("the stream carried no usage; token counts come from usage only (the server must honour stream_options.include_usage)")

// noUsage says why a stream that ended without error has no counts.
func noUsage(res loadgen.Result) error {
	if res.Cut() {
		return fmt.Errorf("the stream ended after %s with no finish reason, no [DONE] and no usage: the server cut it short", plural.Count(res.ContentChunks, "chunk", "chunks"))
	}
	return errNoUsage
}

// tally is what one attempt of a phase met, told once as problems (tell).
type tally struct {
	runs, failed int
	firstErr     string
	early        []string // "N (finish reason)" of the runs that stopped early
	asked        int
	truncated    int
	counted      int64 // the fewest prompt tokens a truncating server counted
	sent         int
	tokens       int64 // of the runs with several tokens a chunk
	chunks       int
}

func (t *tally) fail(err error) {
	t.failed++
	if t.firstErr == "" {
		t.firstErr = err.Error()
	}
}

// observe fills s from one stream: its counts and times where usage gave
// counts, and its Note from what it met; else its Error, returned.
// words is the prompt's size as sent (loadgen.Prompt: about a token each).
func (m *measurer) observe(s *bench.Sample, res loadgen.Result, err error, words, maxTokens int) error {
	t := m.tally
	t.runs++
	if err == nil && !res.HasUsage {
		err = noUsage(res)
	}
	if err != nil {
		s.Error = err.Error()
		t.fail(err)
		return err
	}
	s.PromptTokens, s.CompletionTokens = res.PromptTokens, res.CompletionTokens
	s.TTFTMs, s.TotalMs = ms(res.TTFT()), ms(res.Total())
	s.Stamped = res.Stamped
	var notes []string
	if res.CompletionTokens < int64(maxTokens) {
		finish := orDash(res.Finish)
		notes = append(notes, fmt.Sprintf("stopped early: %d of %s (finish reason %s)", res.CompletionTokens, plural.Count(maxTokens, "token", "tokens"), finish))
		t.early = append(t.early, fmt.Sprintf("%d (%s)", res.CompletionTokens, finish))
		t.asked = maxTokens
	}
	// Each word is at least one token: fewer counted is a cut prompt.
	if res.PromptTokens < int64(words) {
		notes = append(notes, fmt.Sprintf("prompt truncated: %d prompt tokens counted for %d words sent", res.PromptTokens, words))
		if t.truncated == 0 || res.PromptTokens < t.counted {
			t.counted = res.PromptTokens
		}
		t.truncated++
		t.sent = words
	}
	if n := res.ContentChunks; n > 0 && int64(n) < res.CompletionTokens {
		notes = append(notes, fmt.Sprintf("%d tokens in %s", res.CompletionTokens, plural.Count(n, "chunk", "chunks")))
		t.tokens += res.CompletionTokens
		t.chunks += n
	}
	s.Note = strings.Join(notes, "; ")
	return nil
}

// tell adds the attempt's tally to the cell's problems, which report.md
// lists: what a figure is computed from when it is not what was asked.
func (m *measurer) tell(phase string) {
	t := m.tally
	add := func(format string, a ...any) {
		m.res.Problems = append(m.res.Problems, fmt.Sprintf("phase %s: ", phase)+fmt.Sprintf(format, a...))
	}
	runs := plural.Count(t.runs, "run", "runs")
	if t.failed > 0 && t.failed < t.runs {
		add("%d of %s failed (first: %s); its figures are from the other %d", t.failed, runs, t.firstErr, t.runs-t.failed)
	}
	if len(t.early) > 0 {
		add("%d of %s stopped early, at %s of %d tokens: their rates are over the tokens generated", len(t.early), runs, strings.Join(t.early, ", "), t.asked)
	}
	if t.truncated > 0 {
		add("the server truncated the prompt in %d of %s (%d prompt tokens counted for %d words sent): prefill rates are over the tokens it counted", t.truncated, runs, t.counted, t.sent)
	}
	if t.chunks > 0 && (phase == bench.PhaseDecode || phase == bench.PhaseLongContext) {
		add("several tokens a chunk (%d tokens in %s): the decode rate takes the first chunk to hold the mean", t.tokens, plural.Count(t.chunks, "chunk", "chunks"))
	}
}

// goOn says whether a phase's next run is worth sending after err: not
// when the run is cancelled, a request timed out (the next would wait as
// long) or the server exited.
func (m *measurer) goOn(ctx context.Context, err error) bool {
	return ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) && m.srv.exitErr() == nil
}

// measured is the phase's error when none of its samples was measured.
func measured(out []bench.Sample, what string) error {
	for _, s := range out {
		if s.Error == "" {
			return nil
		}
	}
	if len(out) == 0 {
		return fmt.Errorf("%s: nothing measured", what)
	}
	last := out[len(out)-1]
	return fmt.Errorf("%s run %d: %s", what, last.Run, last.Error)
}
