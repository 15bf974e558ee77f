package bench

import (
	"fmt"
	"math"
)

// Bounds of a load phase: what a machine can send and a run can hold.
const (
	MaxLoadRate        = 100_000 // requests/s
	MaxLoadConcurrency = 65_536
	MaxLoadPoints      = 64  // rates or concurrencies in a sweep
	MaxLoadRepeats     = 100 // of each point
	MaxLoadRequests    = 10_000_000
	MaxLoadDurationMs  = 24 * 3600 * 1000
	MaxLoadTokens      = 1 << 20 // one request's prompt or output
)

func (l Load) validate(field string) []error {
	var errs []error
	bad := func(f, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: "+format, append([]any{field, f}, args...)...))
	}
	switch l.Arrival {
	case "", ArrivalPoisson, ArrivalGamma, ArrivalConstant:
	default:
		bad("arrival", "want %q, %q or %q, got %.40q", ArrivalPoisson, ArrivalGamma, ArrivalConstant, l.Arrival)
	}
	if l.Burstiness != 0 && !(l.Burstiness > 0 && l.Burstiness <= 1000) {
		bad("burstiness", "must be > 0 and <= 1000 (1 is Poisson), got %v", l.Burstiness)
	}
	if l.Burstiness != 0 && l.Burstiness != 1 && l.Arrival != ArrivalGamma {
		bad("burstiness", "only a gamma arrival has one")
	}
	sweeps := 0
	if len(l.Rates) > 0 {
		sweeps++
	}
	if len(l.Concurrencies) > 0 {
		sweeps++
	}
	if l.FindMaxRate != nil {
		sweeps++
	}
	if sweeps != 1 {
		bad("rates", "give one of rates, concurrencies or findMaxRate")
	}
	if len(l.Rates) > MaxLoadPoints || len(l.Concurrencies) > MaxLoadPoints {
		bad("rates", "at most %d points in a sweep", MaxLoadPoints)
	}
	for i, r := range l.Rates {
		if !(r > 0 && r <= MaxLoadRate) {
			bad(fmt.Sprintf("rates[%d]", i), "must be > 0 and <= %d requests/s, got %v", MaxLoadRate, r)
		}
	}
	for i, c := range l.Concurrencies {
		if c < 1 || c > MaxLoadConcurrency {
			bad(fmt.Sprintf("concurrencies[%d]", i), "must be 1..%d, got %d", MaxLoadConcurrency, c)
		}
	}
	if len(l.Concurrencies) > 0 && (l.Arrival != "" || l.MaxConcurrency != 0) {
		bad("arrival", "a closed loop (concurrencies) has no arrival process or cap")
	}
	if l.MaxConcurrency < 0 || l.MaxConcurrency > MaxLoadConcurrency {
		bad("maxConcurrency", "must be 0 (no cap) ..%d, got %d", MaxLoadConcurrency, l.MaxConcurrency)
	}
	if l.Requests < 0 || l.Requests > MaxLoadRequests {
		bad("requests", "must be 0..%d, got %d", MaxLoadRequests, l.Requests)
	}
	if l.DurationMs < 0 || l.DurationMs > MaxLoadDurationMs {
		bad("durationMs", "must be 0..%d, got %d", MaxLoadDurationMs, l.DurationMs)
	}
	if l.Requests > 0 && l.DurationMs > 0 {
		bad("durationMs", "give requests or durationMs, not both")
	}
	if l.WarmupRequests < 0 || l.WarmupRequests > MaxLoadRequests {
		bad("warmupRequests", "must be 0..%d, got %d", MaxLoadRequests, l.WarmupRequests)
	}
	if l.Repeats < 0 || l.Repeats > MaxLoadRepeats {
		bad("repeats", "must be 0..%d, got %d", MaxLoadRepeats, l.Repeats)
	}
	switch l.Endpoint {
	case "", "completions", "chat/completions":
	default:
		bad("endpoint", "want \"completions\" or \"chat/completions\", got %.40q", l.Endpoint)
	}
	errs = append(errs, l.Workload.validate(field+".workload")...)
	if s := l.Goodput; s != nil {
		for _, v := range []struct {
			name string
			ms   float64
		}{{"ttftMs", s.TTFTMs}, {"tpotMs", s.TPOTMs}, {"e2elMs", s.E2ELMs}} {
			if !(v.ms >= 0 && v.ms <= 86_400_000) {
				bad("goodput."+v.name, "must be 0 (unset) ..86400000 ms, got %v", v.ms)
			}
		}
		if *s == (SLO{}) {
			bad("goodput", "give at least one of ttftMs, tpotMs, e2elMs")
		}
	}
	if f := l.FindMaxRate; f != nil {
		if !(f.StartRate >= 0 && f.StartRate <= MaxLoadRate) {
			bad("findMaxRate.startRate", "must be 0 (1 request/s) ..%d, got %v", MaxLoadRate, f.StartRate)
		}
		if !(f.MinShare >= 0 && f.MinShare <= 1) {
			bad("findMaxRate.minShare", "must be 0 (0.95) ..1, got %v", f.MinShare)
		}
		if f.MaxPoints < 0 || f.MaxPoints > MaxLoadPoints {
			bad("findMaxRate.maxPoints", "must be 0 (12) ..%d, got %d", MaxLoadPoints, f.MaxPoints)
		}
	}
	return errs
}

func (w Workload) validate(field string) []error {
	var errs []error
	bad := func(f, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: "+format, append([]any{field, f}, args...)...))
	}
	switch w.Kind {
	case "", WorkloadRandom, WorkloadSharedPrefix, WorkloadShareGPT:
	default:
		bad("kind", "want %q, %q or %q, got %.40q", WorkloadRandom, WorkloadSharedPrefix, WorkloadShareGPT, w.Kind)
	}
	if w.Kind == WorkloadShareGPT {
		if w.File == "" {
			bad("file", "a sharegpt workload names its JSON file")
		}
	} else {
		if w.File != "" {
			bad("file", "only a sharegpt workload reads a file")
		}
		errs = append(errs, w.Input.validate(field+".input")...)
	}
	if w.Kind != WorkloadShareGPT || w.Output != (Lengths{}) {
		errs = append(errs, w.Output.validate(field+".output")...)
	}
	if w.Kind == WorkloadSharedPrefix {
		if w.Prefixes < 1 || w.Prefixes > 10_000 {
			bad("prefixes", "must be 1..10000, got %d", w.Prefixes)
		}
		if w.PrefixTokens < 1 || w.PrefixTokens > MaxLoadTokens {
			bad("prefixTokens", "must be 1..%d, got %d", MaxLoadTokens, w.PrefixTokens)
		}
		if !(w.PrefixRatio > 0 && w.PrefixRatio <= 1) {
			bad("prefixRatio", "must be > 0 and <= 1, got %v", w.PrefixRatio)
		}
	} else if w.Prefixes != 0 || w.PrefixTokens != 0 || w.PrefixRatio != 0 {
		bad("prefixes", "only a shared-prefix workload has prefixes")
	}
	return errs
}

func (n Lengths) validate(field string) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{field}, args...)...))
	}
	in := func(v int) bool { return v >= 1 && v <= MaxLoadTokens }
	switch n.Dist {
	case "", DistFixed:
		if n.Tokens != 0 && !in(n.Tokens) {
			bad("tokens must be 1..%d, got %d", MaxLoadTokens, n.Tokens)
		}
	case DistUniform:
		if !in(n.Min) || !in(n.Max) || n.Min > n.Max {
			bad("a uniform range wants 1 <= min <= max <= %d, got %d..%d", MaxLoadTokens, n.Min, n.Max)
		}
	case DistNormal:
		if !(n.Mean >= 1 && n.Mean <= MaxLoadTokens) || !(n.Std >= 0 && n.Std <= MaxLoadTokens) || math.IsNaN(n.Std) {
			bad("a normal length wants 1 <= mean <= %d and 0 <= std, got mean %v std %v", MaxLoadTokens, n.Mean, n.Std)
		}
	default:
		bad("dist: want %q, %q or %q, got %.40q", DistFixed, DistUniform, DistNormal, n.Dist)
	}
	return errs
}
