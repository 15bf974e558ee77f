package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// loadFlags are `bench plan`'s flags of the load phase, named as `vllm
// bench serve` names them where it has the flag.
type loadFlags struct {
	rates, streams, goodput  listFlag
	arrival                  string
	burstiness               float64
	maxConcurrency, requests int
	duration                 time.Duration
	warmups, repeats         int
	seed                     uint64
	endpoint                 string
	inputLen, outputLen      string
	prefixes, prefixLen      int
	prefixRatio              float64
	sharegpt                 string
	findMax, loadOnly        bool
	startRate, minShare      float64
	maxPoints                int
}

func (f *loadFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.rates, "request-rate", "load phase: open-loop `RATES` in requests/s, a sweep (comma-separated)")
	fs.Var(&f.streams, "load-concurrency", "load phase: closed-loop `STREAMS`, a sweep (comma-separated)")
	fs.BoolVar(&f.findMax, "find-max-rate", false, "load phase: search for the highest rate whose goodput is --min-goodput-share of it")
	fs.StringVar(&f.arrival, "arrival", "", "open-loop `ARRIVALS`: poisson (default), gamma or constant")
	fs.Float64Var(&f.burstiness, "burstiness", 0, "gamma arrivals' `SHAPE` (1 is Poisson; under 1 burstier)")
	fs.IntVar(&f.maxConcurrency, "max-concurrency", 0, "open loop: at most `N` requests in flight (0: no cap)")
	fs.IntVar(&f.requests, "num-prompts", 0, "`N` requests counted per point (default 200)")
	fs.DurationVar(&f.duration, "load-duration", 0, "send each point for `DURATION` instead of --num-prompts")
	fs.IntVar(&f.warmups, "num-warmups", 0, "`N` warm-up requests before each point, not counted")
	fs.IntVar(&f.repeats, "repeats", 0, "measure each point `N` times (default 1)")
	fs.Uint64Var(&f.seed, "seed", 0, "`SEED` of the request set and the arrivals")
	fs.StringVar(&f.endpoint, "load-endpoint", "", "`ENDPOINT` of the load: completions (default) or chat/completions")
	fs.StringVar(&f.inputLen, "input-len", "", "prompt `TOKENS`: N, MIN..MAX (uniform) or MEAN+-STD (normal); default 128")
	fs.StringVar(&f.outputLen, "output-len", "", "max_tokens `TOKENS` (ignore_eos asked): N, MIN..MAX or MEAN+-STD; default 128")
	fs.IntVar(&f.prefixes, "prefixes", 0, "shared-prefix workload: `N` prefixes")
	fs.IntVar(&f.prefixLen, "prefix-len", 0, "shared-prefix workload: `TOKENS` per prefix")
	fs.Float64Var(&f.prefixRatio, "prefix-ratio", 0, "shared-prefix workload: `SHARE` of requests opening with a prefix")
	fs.StringVar(&f.sharegpt, "sharegpt", "", "ShareGPT-format JSON `FILE` for the prompts (read, never downloaded)")
	fs.Var(&f.goodput, "goodput", "`SLO`s a good request meets, vLLM's syntax: \"ttft:MS tpot:MS e2el:MS\"")
	fs.Float64Var(&f.startRate, "start-rate", 0, "--find-max-rate: first `RATE` of the ladder (default 1)")
	fs.Float64Var(&f.minShare, "min-goodput-share", 0, "--find-max-rate: `SHARE` of requests that must be good (default 0.95)")
	fs.IntVar(&f.maxPoints, "max-points", 0, "--find-max-rate: at most `N` points (default 12)")
	fs.BoolVar(&f.loadOnly, "load-only", false, "run the load phase alone, without the single-request phases")
}

// load is the load phase the flags ask for, nil for none.
func (f *loadFlags) load() (*bench.Load, error) {
	if len(f.rates) == 0 && len(f.streams) == 0 && !f.findMax {
		if f.loadOnly {
			return nil, fmt.Errorf("-load-only: give the load with --request-rate, --load-concurrency or --find-max-rate")
		}
		return nil, nil
	}
	l := &bench.Load{
		Arrival: f.arrival, Burstiness: f.burstiness, MaxConcurrency: f.maxConcurrency,
		Requests: f.requests, DurationMs: f.duration.Milliseconds(), WarmupRequests: f.warmups,
		Repeats: f.repeats, Seed: f.seed, Endpoint: f.endpoint,
	}
	for _, r := range f.rates {
		v, err := strconv.ParseFloat(r, 64)
		if err != nil {
			return nil, fmt.Errorf("-request-rate %.40q: want a number of requests/s", r)
		}
		l.Rates = append(l.Rates, v)
	}
	for _, s := range f.streams {
		v, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("-load-concurrency %.40q: want a whole number of streams", s)
		}
		l.Concurrencies = append(l.Concurrencies, v)
	}
	if f.findMax {
		l.FindMaxRate = &bench.FindMaxRate{StartRate: f.startRate, MinShare: f.minShare, MaxPoints: f.maxPoints}
	}
	w := &l.Workload
	var err error
	if w.Input, err = parseLengths("input-len", f.inputLen); err != nil {
		return nil, err
	}
	if w.Output, err = parseLengths("output-len", f.outputLen); err != nil {
		return nil, err
	}
	switch {
	case f.sharegpt != "":
		w.Kind, w.File = bench.WorkloadShareGPT, f.sharegpt
	case f.prefixes > 0 || f.prefixLen > 0 || f.prefixRatio > 0:
		w.Kind, w.Prefixes, w.PrefixTokens, w.PrefixRatio = bench.WorkloadSharedPrefix, f.prefixes, f.prefixLen, f.prefixRatio
	}
	if len(f.goodput) > 0 {
		slo, err := parseGoodput(f.goodput)
		if err != nil {
			return nil, err
		}
		l.Goodput = &slo
	}
	return l, nil
}

// parseLengths reads N, MIN..MAX or MEAN+-STD.
func parseLengths(flagName, s string) (bench.Lengths, error) {
	bad := fmt.Errorf("-%s %.40q: want N, MIN..MAX or MEAN+-STD tokens", flagName, s)
	if s == "" {
		return bench.Lengths{}, nil
	}
	if lo, hi, ok := strings.Cut(s, ".."); ok {
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil {
			return bench.Lengths{}, bad
		}
		return bench.Lengths{Dist: bench.DistUniform, Min: a, Max: b}, nil
	}
	if m, sd, ok := strings.Cut(s, "+-"); ok {
		a, err1 := strconv.ParseFloat(m, 64)
		b, err2 := strconv.ParseFloat(sd, 64)
		if err1 != nil || err2 != nil {
			return bench.Lengths{}, bad
		}
		return bench.Lengths{Dist: bench.DistNormal, Mean: a, Std: b}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return bench.Lengths{}, bad
	}
	return bench.Lengths{Dist: bench.DistFixed, Tokens: n}, nil
}

// parseGoodput reads vLLM's --goodput KEY:MS pairs (ttft, tpot, e2el),
// given as one flag with spaces or several.
func parseGoodput(pairs []string) (bench.SLO, error) {
	var slo bench.SLO
	for _, p := range pairs {
		for _, kv := range strings.Fields(p) {
			k, v, ok := strings.Cut(kv, ":")
			ms, err := strconv.ParseFloat(v, 64)
			if !ok || err != nil {
				return slo, fmt.Errorf("-goodput %.40q: want KEY:MS with KEY ttft, tpot or e2el", kv)
			}
			switch k {
			case "ttft":
				slo.TTFTMs = ms
			case "tpot":
				slo.TPOTMs = ms
			case "e2el":
				slo.E2ELMs = ms
			default:
				return slo, fmt.Errorf("-goodput %.40q: the keys are ttft, tpot and e2el (vLLM's)", kv)
			}
		}
	}
	return slo, nil
}
