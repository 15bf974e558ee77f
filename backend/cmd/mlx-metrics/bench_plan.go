package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mlx-bun/mlx-metrics/gpu/plans"
	"github.com/mlx-bun/mlx-metrics/shared/atomicfile"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/cliflag"
)

// listFlag collects a repeatable (or comma-separated) flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// runBenchPlan is `mlx-metrics bench plan`: it writes a plan from flags.
// The server command follows `--`; {model}, {port} and {self} are filled in
// per cell. Without a command the cells start the reference engine, or,
// given --base-url, attach to the server already running there.
func runBenchPlan(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench plan", flag.ContinueOnError)
	var o plans.Options
	var models, env listFlag
	out := fs.String("out", "-", "`FILE` to write, e.g. <home>/metrics/bench/plans/<name>.json (a profile serve lists); - for stdout")
	force := fs.Bool("force", false, "overwrite an existing file")
	fs.StringVar(&o.Scope, "scope", bench.ScopeScoped, "profile `SCOPE`: scoped (only --model) or all")
	fs.StringVar(&o.Description, "description", "", "`TEXT` saying what the plan measures")
	fs.Var(&models, "model", "`MODEL` to measure, one cell each (repeat or comma-separate; default reference-sim)")
	fs.StringVar(&o.Kind, "kind", bench.KindTree, "`KIND`: tree (the server under test) or reference (a comparison server)")
	fs.StringVar(&o.Configuration, "configuration", "default", "`LABEL` of the server configuration")
	fs.Var(&env, "env", "`KEY=VALUE` for the server's environment (repeat)")
	fs.IntVar(&o.Port, "port", 0, "`PORT` for the server ({port}); 0 picks a free one per run")
	fs.StringVar(&o.BaseURL, "base-url", "", "OpenAI API root `URL` (default http://127.0.0.1:{port}/v1); without a command, the running server to attach to")
	fs.StringVar(&o.ReadyURL, "ready-url", "", "`URL` that answers 2xx once the server is ready (default {base}/models; /health for the reference engine; attached: {base}/models, then /health)")
	fs.StringVar(&o.APIModel, "api-model", "", "model `NAME` sent in requests, when it differs from --model")
	readyTimeout := fs.Duration("ready-timeout", 0, "`DURATION` a server may take to become ready (default 10m; 1m for an attached server)")
	ph := &o.Phases
	fs.IntVar(&ph.DecodeRuns, "decode-runs", 5, "`N` decode runs")
	fs.IntVar(&ph.DecodeTokens, "decode-tokens", 192, "`TOKENS` per decode run")
	fs.Float64Var(&ph.UnstableSpread, "unstable-spread", 1.15, "decode max/min `RATIO` above which a cell is tagged unstable")
	fs.IntVar(&ph.ColdPromptTokens, "prompt-tokens", 1024, "prompt size in `TOKENS` of the cold and warm TTFT runs")
	fs.IntVar(&ph.ColdRuns, "cold-runs", 3, "`N` cold TTFT runs (each with a nonce)")
	fs.IntVar(&ph.WarmRuns, "warm-runs", 3, "`N` warm TTFT runs (the same prompt repeated)")
	fs.IntVar(&ph.LongContextTokens, "long-context-tokens", 16384, "long-context prompt size in `TOKENS`; -1 skips the phase")
	fs.IntVar(&ph.LongDecodeTokens, "long-decode-tokens", 64, "`TOKENS` decoded after the long prompt")
	fs.IntVar(&ph.Concurrency, "concurrency", 4, "`N` concurrent streams of the aggregate phase")
	fs.IntVar(&ph.ConcurrentTokens, "concurrent-tokens", 128, "`TOKENS` per concurrent stream")
	fs.Float64Var(&ph.RequestTimeoutScale, "timeout-scale", 1, "`FACTOR` multiplying every request's timeout (slow machines)")
	var lf loadFlags
	lf.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, `usage: mlx-metrics bench plan [--out FILE] [flags] [-- server command...]

Writes a bench-serve plan: one cell per --model, each starting the server
command after -- ({model}, {port} and {self} are filled in). Without a
command, the cells start the reference engine; with --base-url and no
command, they attach to the server already running there (nothing is
started or stopped; there is no cold start). The plan goes to stdout unless
--out names a file; in <home>/metrics/bench/plans/ it is a profile that serve
on that home lists (<home> is ~/.mlx-metrics, or MLX_METRICS_HOME; scripts/run
uses the checkout's .mlx-metrics/). Examples (MLX):

  mlx-metrics bench plan --base-url http://127.0.0.1:8080/v1 > plan.json

  mlx-metrics bench plan --out ~/.mlx-metrics/metrics/bench/plans/qwen.json \
    --model mlx-community/Qwen3-0.6B-4bit -- \
    python -m mlx_lm.server --model {model} --port {port}

  mlx-metrics bench plan --out ~/.mlx-metrics/metrics/bench/plans/running.json \
    --model mlx-community/Qwen3-0.6B-4bit --base-url http://127.0.0.1:8080/v1

  mlx-metrics bench plan --load-only --request-rate 1,2,4,8 --num-prompts 200 \
    --input-len 512 --output-len 128 --goodput "ttft:500 tpot:50" > sweep.json

  mlx-metrics bench plan --load-only --find-max-rate --goodput "ttft:500 tpot:50" > capacity.json

flags:`)
		fs.PrintDefaults()
	}
	if err := cliflag.Parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &exitError{code: 2, err: err, usage: true}
	}
	o.Argv = fs.Args()
	o.Models = models
	load, err := lf.load()
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	ph.Load, ph.LoadOnly = load, lf.loadOnly
	o.Attach = o.BaseURL != "" && len(o.Argv) == 0
	if o.Attach {
		for _, f := range []struct {
			set  bool
			name string
		}{{o.Port != 0, "-port"}, {len(env) > 0, "-env"}} {
			if f.set {
				return &exitError{code: 2, err: fmt.Errorf("%s: --base-url without a command attaches to a running server, which this plan does not start; drop %s or give the command after --", f.name, f.name)}
			}
		}
	}
	o.ReadyTimeoutMs = readyTimeout.Milliseconds()
	if *readyTimeout < 0 || (*readyTimeout > 0 && *readyTimeout < time.Millisecond) {
		return &exitError{code: 2, err: fmt.Errorf("-ready-timeout %v: must be positive", *readyTimeout)}
	}
	if len(env) > 0 {
		o.Env = map[string]string{}
		for _, kv := range env {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return &exitError{code: 2, err: fmt.Errorf("-env %q: want KEY=VALUE", kv)}
			}
			o.Env[k] = v
		}
	}
	if *out == "" {
		return usageErr("--out \"\": want a FILE, or - for stdout (the default)")
	}
	p, err := plans.FromOptions(o)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if *out == "-" {
		_, err = os.Stdout.Write(b)
		return err
	}
	if name := strings.TrimSuffix(filepath.Base(*out), ".json"); !bench.ProfileNamePattern.MatchString(name) || !strings.HasSuffix(*out, ".json") {
		fmt.Fprintf(os.Stderr, "note: %s is not <name>.json with a name POST /bench accepts ([A-Za-z0-9][A-Za-z0-9._-]*); `bench run --plan` still takes it\n", *out)
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return err
	}
	// Whole or not at all: the backend may list the profile at any moment.
	write := atomicfile.WriteNew
	if *force {
		write = atomicfile.WriteFile
	}
	if err := write(*out, b, 0o644); errors.Is(err, os.ErrExist) {
		return &exitError{code: 2, err: fmt.Errorf("%s exists; --force overwrites it", *out)}
	} else if err != nil {
		return err
	}
	what := "cells"
	if len(p.Cells) == 1 {
		what = "cell"
	}
	if o.Attach {
		what += " attached to " + o.BaseURL
	}
	fmt.Fprintf(os.Stderr, "wrote %s: %d %s\n", *out, len(p.Cells), what)
	return nil
}
