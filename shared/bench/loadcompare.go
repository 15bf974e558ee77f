package bench

import "math"

// LoadCompareRule says when a load point's figure differs between runs;
// printed with every comparison of load points.
const LoadCompareRule = "a load point's figure differs when the change of its mean over repeats is over the threshold and " +
	"the two runs' 95 % confidence intervals do not overlap; where either run measured the point once, " +
	"only when the change is also past x1.2"

// loadNoiseRatio is the single-repeat floor. Not measured yet as the
// single-request phases' floors were; docs/bench-serve.md says so.
const loadNoiseRatio = 1.2

// JudgeLoad compares figure f of a load point, B's estimate against A's,
// by LoadCompareRule; threshold is a fraction.
func JudgeLoad(f LoadFigure, a, b Estimate, threshold float64) Judgement {
	if a.N == 0 || b.N == 0 || a.Mean == 0 || math.IsNaN(a.Mean) || math.IsNaN(b.Mean) {
		return Judgement{Change: math.NaN(), Verdict: VerdictSame}
	}
	j := Judgement{Change: (b.Mean - a.Mean) / a.Mean, Verdict: VerdictSame}
	if math.Abs(j.Change) <= threshold {
		return j
	}
	if a.Interval && b.Interval {
		if a.Lo <= b.Hi && b.Lo <= a.Hi {
			j.Why = "the 95 % intervals overlap"
			return j
		}
	} else if math.Max(a.Mean, b.Mean) <= loadNoiseRatio*math.Min(a.Mean, b.Mean) {
		j.Why = "one repeat, under x1.2"
		return j
	}
	if j.Change > 0 == f.HigherIsBetter {
		j.Verdict = VerdictFaster
	} else {
		j.Verdict = VerdictSlower
	}
	return j
}

// MaxRateFigure is the max rate found, compared as a load figure: the
// search's resolution (5 %) is its noise.
var MaxRateFigure = LoadFigure{Key: "max_rate", Name: "max rate", Unit: "req/s", HigherIsBetter: true}
