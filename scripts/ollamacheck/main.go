// Command ollamacheck checks a bench-serve run against ollama: complete,
// every phase measured (and, for head-to-heads, identical requests and a
// parity verdict); then each request of the run's single-request phases
// held to ollama's own timing of that same request: its whole time to
// ollama's access log (-log), and, when the run went through
// scripts/ollamafront (ollama's own OpenAI layer over its native API,
// which keeps the timings the OpenAI layer drops), its TTFT and decode
// rate to ollama's (-timings). With -proxy, serve --proxy-to's snapshot
// held to what the npm openai client sent through it. Run with GOWORK=off
// from its folder (scripts/test-ollama and scripts/bench-ollama build it):
//
//	go run . -run DIR -log ollama.log -timings timings.ndjson
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

func main() {
	runDir := flag.String("run", "", "bench run `DIR` (its run.json) to check and set beside ollama's timing")
	started := flag.Bool("started", false, "the run started its server: cold start must be measured")
	identical := flag.Bool("identical", true, "each head-to-head's two cells must have been sent identical requests")
	parity := flag.String("parity", "", "each head-to-head's parity must read `WORD` (bench.ParityWord: parity, raw: tokenizer drift, …); empty: not checked")
	logPath := flag.String("log", "", "ollama's log `FILE`: each request of the run's single-request phases checked against ollama's latency of the same request")
	timings := flag.String("timings", "", "scripts/ollamafront's timings `FILE` (the run went through it): each request's TTFT and decode held to ollama's own timing of it")
	sameTol := flag.Float64("same-tolerance", 0.05, "`FRACTION` a request's time may differ from ollama's timing of it by")
	sameFloor := flag.Float64("same-floor-ms", 10, "`MS` a request's time may differ from ollama's log of it by, whatever the fraction")
	tokenFloor := flag.Float64("token-floor-ms", 20, "`MS` a request's TTFT and first to last token may differ from ollama's timing of them by, whatever the fraction")
	proxy := flag.String("proxy", "", "serve's root `URL`: check its snapshot counted what -client's JSON line says the client sent")
	token := flag.String("token", "", "bearer `TOKEN` for -proxy")
	client := flag.String("client", "", "`FILE` holding the openai client's JSON line (scripts/openai-client)")
	flag.Parse()
	var err error
	switch {
	case *proxy != "" && *client != "":
		err = checkProxy(*proxy, *token, *client)
	case *runDir != "":
		err = checkRun(*runDir, *logPath, *timings, expect{*started, *identical, *parity}, rule{*sameTol, *sameFloor}, rule{*sameTol, *tokenFloor})
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ollamacheck:", err)
		os.Exit(1)
	}
}

// checkRun checks the run is complete, every phase measured, then holds
// its requests to ollama's own timing of them.
func checkRun(runDir, logPath, timingsPath string, e expect, same, tokens rule) error {
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
	if logPath == "" && timingsPath == "" {
		return nil
	}
	return sameRequests(rec, logPath, timingsPath, same, tokens)
}
