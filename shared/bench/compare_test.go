package bench

import (
	"math"
	"strings"
	"testing"
)

func TestJudge(t *testing.T) {
	fig := func(key string) Figure { f, _ := FigureByKey(key); return f }
	rate, time_, mem, cold := fig("decode"), fig("ttft_cold"), fig("peak_rss"), fig("cold_start")
	r := func(lo, hi float64) *Range { return &Range{Min: lo, Max: hi} }
	tests := []struct {
		name   string
		f      Figure
		a, b   float64
		ra, rb *Range
		want   string
		why    string // in Why
	}{
		{"past the threshold and the floor, no spreads", rate, 100, 111, nil, nil, VerdictFaster, ""},
		{"within the threshold", rate, 100, 104, nil, nil, VerdictSame, ""},
		{"slower", rate, 100, 89, nil, nil, VerdictSlower, ""},
		{"lower time is faster", time_, 1000, 790, nil, nil, VerdictFaster, ""},
		{"higher time is slower", time_, 1000, 1300, nil, nil, VerdictSlower, ""},
		{"no change", time_, 100, 100, nil, nil, VerdictSame, ""},
		{"less memory", mem, 100, 80, nil, nil, VerdictLess, ""},
		{"more memory", mem, 100, 120, nil, nil, VerdictMore, ""},
		{"no base to compare with", rate, 0, 10, nil, nil, VerdictSame, ""},
		{"outside both spreads", rate, 100, 120, r(95, 105), r(115, 125), VerdictFaster, ""},
		{"B inside A's spread: noise", rate, 100, 120, r(80, 125), r(115, 125), VerdictSame, "spread"},
		{"A inside B's spread: noise", rate, 100, 120, r(95, 105), r(90, 130), VerdictSame, "spread"},
		{"outside both spreads but under the threshold", rate, 100, 103, r(99, 101), r(102.5, 103.5), VerdictSame, ""},
		{"spreads of several samples: no floor", rate, 100, 107, r(99, 101), r(106, 108), VerdictFaster, ""},
		// One sample a side: the figure's noise floor decides.
		{"one sample, under the ratio", rate, 100, 108, r(100, 100), r(108, 108), VerdictSame, "noise floor x1.1"},
		{"one sample on one side", rate, 100, 108, r(95, 105), r(108, 108), VerdictSame, "noise floor"},
		{"cold start +108% in 65 ms (issue 42)", cold, 60, 125, nil, nil, VerdictSame, "noise floor x1.5 and 250 ms"},
		{"cold start 10 s to 20 s", cold, 10000, 20000, nil, nil, VerdictSlower, ""},
		{"cold start past the ratio, under the difference", cold, 300, 540, nil, nil, VerdictSame, "noise floor"},
		{"cold start past the difference, under the ratio", cold, 10000, 14000, nil, nil, VerdictSame, "noise floor"},
		{"warm TTFT 0.2 ms to 1.6 ms", fig("ttft_warm"), 0.2, 1.6, nil, nil, VerdictSame, "noise floor"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := Judge(tc.f, tc.a, tc.b, tc.ra, tc.rb, 0.05)
			if j.Verdict != tc.want || !strings.Contains(j.Why, tc.why) || (tc.why == "" && j.Why != "") {
				t.Errorf("Judge(%s, %v, %v) = %+v, want %s (why %q)", tc.f.Name, tc.a, tc.b, j, tc.want, tc.why)
			}
			if tc.a != 0 && math.Abs(j.Change-(tc.b-tc.a)/tc.a) > 1e-12 {
				t.Errorf("change %v", j.Change)
			}
		})
	}
}

// Every figure has a floor: a new one without is judged on one sample.
func TestEveryFigureHasANoiseFloor(t *testing.T) {
	for _, f := range Figures {
		if n := f.Noise(); n.Ratio <= 1 || n.Abs < 0 {
			t.Errorf("%s: noise floor %+v", f.Key, n)
		}
	}
	if len(noiseFloors) != len(Figures) {
		t.Errorf("%d floors for %d figures", len(noiseFloors), len(Figures))
	}
}

func TestCombine(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{VerdictSame, VerdictLess}, VerdictSame},
		{[]string{VerdictFaster, VerdictSame, VerdictMore}, VerdictFaster},
		{[]string{VerdictFaster, VerdictSlower}, VerdictMixed},
		{[]string{VerdictSlower}, VerdictSlower},
	} {
		if got := Combine(tc.in); got != tc.want {
			t.Errorf("Combine(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestJudgeLoad(t *testing.T) {
	ttft := LoadFigures[2] // TTFT p50, lower is better
	rate := LoadFigures[0]
	for _, tc := range []struct {
		name string
		f    LoadFigure
		a, b []float64
		want string
	}{
		{"apart", ttft, []float64{100, 101, 99}, []float64{150, 151, 149}, VerdictSlower},
		{"apart, a rate", rate, []float64{10, 10.1, 9.9}, []float64{12, 12.1, 11.9}, VerdictFaster},
		{"overlapping", ttft, []float64{100, 140, 60}, []float64{120, 160, 80}, VerdictSame},
		{"under the threshold", ttft, []float64{100, 100.1}, []float64{102, 102.1}, VerdictSame},
		{"one repeat under the floor", ttft, []float64{100}, []float64{115}, VerdictSame},
		{"one repeat past the floor", ttft, []float64{100}, []float64{130}, VerdictSlower},
		{"not measured", ttft, nil, []float64{1}, VerdictSame},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := JudgeLoad(tc.f, Estimate95(tc.a), Estimate95(tc.b), 0.05).Verdict; got != tc.want {
				t.Errorf("verdict %s, want %s", got, tc.want)
			}
		})
	}
}

func TestEstimate95(t *testing.T) {
	e := Estimate95([]float64{10, 12, 14, math.NaN()})
	// mean 12, s = 2, t(2) = 4.303: half-width 4.303*2/sqrt(3)
	if e.N != 3 || e.Mean != 12 || math.Abs(e.Std-2) > 1e-12 || math.Abs(e.Hi-12-4.303*2/math.Sqrt(3)) > 1e-9 || math.Abs(e.CV-2.0/12) > 1e-12 {
		t.Errorf("%+v", e)
	}
	if one := Estimate95([]float64{5}); one.Interval || one.Lo != 5 || one.Hi != 5 {
		t.Errorf("one value: %+v", one)
	}
}
