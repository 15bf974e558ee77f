// Command ollamacheck checks a bench-serve run against ollama: complete,
// every phase measured (and, for head-to-heads, identical requests and a
// parity verdict); with -log, each request of the single-request phases
// timed as ollama's own access log timed the same request; with -base,
// beside ollama's own timing of the same kind of requests: its native
// /api/generate (stream false, raw, temperature 0) with prompts built as
// the runner builds them (gpu/loadgen.Prompt, a nonce where the runner
// uses one), the same prompt sizes and token counts, one after another.
// ollama times a request itself: prompt_eval_duration from the request
// reaching its runner to the first token's logits, eval_duration from
// then to the last token, eval_count tokens in it. Run with GOWORK=off
// from its folder (scripts/bench-ollama does):
//
//	go run . -base http://127.0.0.1:11434 -model tiny -run DIR
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"

	"github.com/mlx-bun/mlx-metrics/gpu/loadgen"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

func main() {
	base := flag.String("base", "", "ollama's root `URL` (loopback), e.g. http://127.0.0.1:11434; without it, only -run's completeness is checked")
	model := flag.String("model", "tiny", "`MODEL` to ask for")
	runDir := flag.String("run", "", "bench run `DIR` (its run.json) to check and set beside ollama's timing")
	started := flag.Bool("started", false, "the run started its server: cold start must be measured")
	identical := flag.Bool("identical", true, "each head-to-head's two cells must have been sent identical requests")
	parity := flag.String("parity", "", "each head-to-head's parity must read `WORD` (bench.ParityWord: parity, raw: tokenizer drift, …); empty: not checked")
	tol := flag.Float64("tolerance", 0.35, "`FRACTION` the run's decode rate may differ from ollama's own timing of a replay by")
	logPath := flag.String("log", "", "ollama's log `FILE`: each request of the run's single-request phases checked against ollama's latency of the same request")
	sameTol := flag.Float64("same-tolerance", 0.05, "`FRACTION` a request's time may differ from ollama's log of it by")
	sameFloor := flag.Float64("same-floor-ms", 10, "`MS` a request's time may differ from ollama's log of it by, whatever the fraction")
	proxy := flag.String("proxy", "", "serve's root `URL`: check its snapshot counted what -client's JSON line says the client sent")
	token := flag.String("token", "", "bearer `TOKEN` for -proxy")
	client := flag.String("client", "", "`FILE` holding the openai client's JSON line (scripts/openai-client)")
	flag.Parse()
	var err error
	switch {
	case *proxy != "" && *client != "":
		err = checkProxy(*proxy, *token, *client)
	case *runDir != "":
		err = checkRun(*base, *model, *runDir, *logPath, expect{*started, *identical, *parity}, rule{*tol, 0}, rule{*sameTol, *sameFloor})
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ollamacheck:", err)
		os.Exit(1)
	}
}

// checkRun checks the run is complete, every phase measured, then, given
// ollama's base URL, that its figures agree with ollama's own timing.
func checkRun(base, model, runDir, logPath string, e expect, replay, same rule) error {
	b, err := os.ReadFile(runDir + "/run.json")
	if err != nil {
		return err
	}
	var rec bench.RunRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return err
	}
	if err := complete(rec, e); err != nil {
		return err
	}
	fmt.Printf("bench-serve run %s: complete, every phase measured%s\n", rec.ID, e.said(rec))
	if logPath != "" {
		if err := sameRequests(rec, logPath, same); err != nil {
			return err
		}
	}
	if base == "" {
		return nil
	}
	rows, steady, err := check(base, model, rec)
	if err != nil {
		return err
	}
	if steady != "" {
		fmt.Printf("\nthe decode rate is not judged against the replay: %s (a busy machine; each request was held to ollama's log above)\n", steady)
		return nil
	}
	return replay.judge(rows)
}

// check times the run's kinds of requests through ollama's native API and
// prints the two side by side; the rows with a tolerance are judged.
// steady says why the replay comparison is not worth judging: the run's
// or the replay's decode runs spread past the plan's unstableSpread (the
// runner's own rule), so the machine was busy during one of them; "" when
// both were steady.
func check(base, model string, rec bench.RunRecord) (rows []row, steady string, err error) {
	cell, p := rec.Cells[0], rec.Plan.Phases.Defaults()
	o := ollama{base: base, model: model}
	ctx := context.Background()
	if err := o.streams(ctx, 200); err != nil {
		return nil, "", err
	}
	nonce := func(i int) string { return fmt.Sprintf("%s-check-%d", rec.ID, i) }

	var decode []timing
	for i := range p.DecodeRuns {
		t, err := o.generate(ctx, loadgen.Prompt(32, nonce(i)), p.DecodeTokens)
		if err != nil {
			return nil, "", err
		}
		decode = append(decode, t)
	}
	rows = append(rows, row{"decode tok/s", median(cell, bench.PhaseDecode, decodeRate), medianOf(decode, timing.evalRate), "eval_count / eval_duration", judgedRate})

	var cold []timing
	for i := range p.ColdRuns {
		t, err := o.generate(ctx, loadgen.Prompt(p.ColdPromptTokens, nonce(100+i)), 8)
		if err != nil {
			return nil, "", err
		}
		cold = append(cold, t)
	}
	rows = append(rows,
		row{"cold TTFT ms", median(cell, bench.PhaseColdTTFT, ttft), medianOf(cold, timing.promptMs), "prompt_eval_duration", shown},
		row{"prefill 1k tok/s", median(cell, bench.PhaseColdTTFT, prefillRate), medianOf(cold, timing.promptRate), "prompt_eval_count / prompt_eval_duration", shown})

	warmPrompt := loadgen.Prompt(p.ColdPromptTokens, nonce(200))
	if _, err := o.generate(ctx, warmPrompt, 8); err != nil { // fills the cache, as the runner's priming
		return nil, "", err
	}
	var warm []timing
	for range p.WarmRuns {
		t, err := o.generate(ctx, warmPrompt, 8)
		if err != nil {
			return nil, "", err
		}
		warm = append(warm, t)
	}
	rows = append(rows, row{"warm TTFT ms", median(cell, bench.PhaseWarmTTFT, ttft), medianOf(warm, timing.promptMs), "prompt_eval_duration", shown})

	if p.LongContextTokens > 0 {
		t, err := o.generate(ctx, loadgen.Prompt(p.LongContextTokens, nonce(300)), p.LongDecodeTokens)
		if err != nil {
			return nil, "", err
		}
		rows = append(rows,
			row{"long-context TTFT ms", median(cell, bench.PhaseLongContext, ttft), t.promptMs(), "prompt_eval_duration", shown},
			row{"long-context prefill tok/s", median(cell, bench.PhaseLongContext, prefillRate), t.promptRate(), "prompt_eval_count / prompt_eval_duration", shown},
			row{"decode after it tok/s", median(cell, bench.PhaseLongContext, decodeRate), t.evalRate(), "eval_count / eval_duration", shown})
	}

	// The concurrent streams at once; ollama times each alone, so its
	// aggregate is the sum of their rates (the streams overlap throughout).
	conc := make([]timing, p.Concurrency)
	errs := make([]error, p.Concurrency)
	var wg sync.WaitGroup
	for i := range conc {
		wg.Go(func() { conc[i], errs[i] = o.generate(ctx, loadgen.Prompt(32, nonce(400+i)), p.ConcurrentTokens) })
	}
	wg.Wait()
	var sum float64
	for i, t := range conc {
		if errs[i] != nil {
			return nil, "", errs[i]
		}
		sum += t.evalRate()
	}
	rows = append(rows, row{fmt.Sprintf("aggregate x%d tok/s", p.Concurrency), median(cell, bench.PhaseConcurrent, aggregate), sum, "sum of the streams' eval_count / eval_duration", shown})

	fmt.Printf("bench-serve run %s beside ollama's own timing (medians; ollama's from %s/api/generate after the run)\n\n", rec.ID, base)
	fmt.Printf("| figure | bench-serve | ollama's own | bench-serve / ollama | ollama's figure |\n|---|--:|--:|--:|---|\n")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %.1f | %s | %s |\n", r.name, num(r.bench), r.ollama, ratio(r.bench, r.ollama), r.what)
	}
	fmt.Printf("\nollama's prompt counts: decode %d, cold %d, warm %d tokens; its decode runs %s tok/s\n",
		decode[0].PromptEvalCount, cold[0].PromptEvalCount, warm[0].PromptEvalCount, rates(decode))
	var replayRates []float64
	for _, t := range decode {
		replayRates = append(replayRates, t.evalRate())
	}
	limit := p.UnstableSpread
	var runRates []float64
	for _, s := range bench.PhaseSamples(cell.Samples, bench.PhaseDecode) {
		runRates = append(runRates, decodeRate(s))
	}
	if s := bench.Spread(runRates); s > limit {
		steady = fmt.Sprintf("the run's decode runs spread %.2fx (over %.2f)", s, limit)
	} else if s := bench.Spread(replayRates); s > limit {
		steady = fmt.Sprintf("the replay's decode runs spread %.2fx (over %.2f)", s, limit)
	}
	return rows, steady, nil
}

type row struct {
	name          string
	bench, ollama float64 // bench -1: not measured
	what          string
	judged        judged
}

func num(v float64) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", v)
}

func ratio(a, b float64) string {
	if a < 0 || b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func rates(ts []timing) string {
	var b bytes.Buffer
	for i, t := range ts {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%.0f", t.evalRate())
	}
	return b.String()
}
