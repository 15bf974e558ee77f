package bench

import (
	"fmt"
	"math"
)

// Verdicts of a comparison of run B against run A.
const (
	VerdictFaster = "faster"
	VerdictSlower = "slower"
	VerdictSame   = "same"
	VerdictMixed  = "mixed"
	VerdictLess   = "less" // memory
	VerdictMore   = "more" // memory
)

// CompareRule says when a difference counts; printed with every comparison.
const CompareRule = "a figure differs when the change is over the threshold and, " +
	"where both runs kept a spread of several samples, each run's median is outside the other's spread " +
	"(the least to the greatest of its samples); where either run has one sample of it (or kept no spread), " +
	"only when the change is also past the figure's noise floor"

// Noise is how far one sample of a figure moves between two runs of the
// same server: a change within either bound is not told from noise.
type Noise struct {
	Ratio float64 // the greater value over the lesser
	Abs   float64 // the difference, in the figure's unit
}

// noiseFloors were measured with the smoke profile (the reference engine,
// fast rates) run 52 times on an idle 2-core machine and 20 times with a
// busy loop on the runner's core, rounded up; docs/bench-serve.md has the
// figures. The worst pair of each is below its floor. Cold start's ratio
// is not from a real model's load (the engine's is a fixed 50 ms sleep):
// its spread there is the process start, hence the 250 ms.
var noiseFloors = map[string]Noise{
	"decode":       {Ratio: 1.10},          // worst 1.05
	"ttft_cold":    {Ratio: 1.25, Abs: 20}, // worst 1.77, 8.3 ms
	"ttft_warm":    {Ratio: 1.25, Abs: 5},  // worst 8.3, 1.4 ms
	"prefill_1k":   {Ratio: 2.0},           // worst 1.77
	"prefill_long": {Ratio: 2.0},           // worst 1.94
	"aggregate":    {Ratio: 1.5},           // worst 1.48
	"cold_start":   {Ratio: 1.5, Abs: 250}, // worst 2.01, 62 ms (the pair: 2.08)
	"peak_rss":     {Ratio: 1.10},          // worst 1.04
}

// Noise is the figure's noise floor for one sample a side.
func (f Figure) Noise() Noise { return noiseFloors[f.Key] }

// NoiseFloor is the floor as the CLI prints it: "x1.5 and 250 ms".
func (f Figure) NoiseFloor() string {
	n := f.Noise()
	if n.Abs == 0 {
		return fmt.Sprintf("x%g", n.Ratio)
	}
	return fmt.Sprintf("x%g and %g %s", n.Ratio, n.Abs, f.Unit)
}

// Judgement is one figure's comparison: the change (B-A)/A, the verdict,
// and for a change over the threshold judged the same, why.
type Judgement struct {
	Change  float64
	Verdict string
	Why     string
}

// Judge compares figure f of run B (b) against run A (a) by CompareRule.
// ra and rb are the runs' spreads, nil when not kept; threshold is a
// fraction.
func Judge(f Figure, a, b float64, ra, rb *Range, threshold float64) Judgement {
	if a == 0 {
		return Judgement{Change: math.NaN(), Verdict: VerdictSame}
	}
	j := Judgement{Change: (b - a) / a, Verdict: VerdictSame}
	if math.Abs(j.Change) <= threshold {
		return j
	}
	oneSample := ra == nil || rb == nil || ra.Min == ra.Max || rb.Min == rb.Max
	if !oneSample && (b >= ra.Min && b <= ra.Max || a >= rb.Min && a <= rb.Max) {
		j.Why = "inside the spread"
		return j
	}
	if n := f.Noise(); oneSample && (math.Max(a, b) <= n.Ratio*math.Min(a, b) || math.Abs(b-a) <= n.Abs) {
		j.Why = "one sample, under the noise floor " + f.NoiseFloor()
		return j
	}
	better := j.Change > 0 == f.HigherIsBetter
	switch {
	case f.Memory && better:
		j.Verdict = VerdictLess
	case f.Memory:
		j.Verdict = VerdictMore
	case better:
		j.Verdict = VerdictFaster
	default:
		j.Verdict = VerdictSlower
	}
	return j
}

// Combine is the verdict over several: memory verdicts do not count.
func Combine(vs []string) string {
	faster, slower := false, false
	for _, v := range vs {
		switch v {
		case VerdictFaster:
			faster = true
		case VerdictSlower:
			slower = true
		case VerdictMixed:
			faster, slower = true, true
		}
	}
	switch {
	case faster && slower:
		return VerdictMixed
	case faster:
		return VerdictFaster
	case slower:
		return VerdictSlower
	}
	return VerdictSame
}
