package main

import (
	"flag"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// loadEntry is a run of one cell with a point at 10 req/s measured three
// times, its TTFT p50 about ttft ms, and the max rate found.
func loadEntry(id string, ttft, maxRate float64) bench.HistoryEntry {
	var points []bench.LoadPoint
	for r, d := range []float64{-1, 0, 1} {
		points = append(points, bench.LoadPoint{Point: 1, Repeat: r + 1, OfferedRate: 10, Requests: 100, Completed: 100,
			RequestThroughput: 9.8, OutputThroughput: 1000, TTFT: bench.Dist{Count: 100, Median: ttft + d, P99: 2 * ttft}})
	}
	return bench.HistoryEntry{ID: id, Profile: "sweep", Cells: []bench.CompactCell{{
		Key: "m/tree/a", Status: bench.CellMeasured, LoadPoints: points,
		MaxRate: &bench.MaxRate{Rate: maxRate, MinShare: 0.95, Points: 6},
	}}}
}

func TestCompareLoadPoints(t *testing.T) {
	for _, tc := range []struct {
		name        string
		a, b        bench.HistoryEntry
		regressions int
		want        []string
	}{
		{"slower TTFT, lower max rate", loadEntry("A", 100, 40), loadEntry("B", 150, 20), 3, []string{
			"at 10 req/s TTFT p50  100.0 ±2.48  150.0 ±2.48  +50.0%  slower",
			"at 10 req/s req/s",
			"max rate  40.0  20.0  -50.0%  slower",
			"load points: a load point's figure differs when",
			"verdict: slower",
		}},
		{"the same", loadEntry("A", 100, 40), loadEntry("B", 101, 41), 0, []string{
			"at 10 req/s TTFT p50  100.0 ±2.48  101.0 ±2.48  +1.0%  same",
			"verdict: same",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			n := printComparison(&out, tc.a, tc.b, 0.05, 0.10)
			text := strings.Join(strings.Fields(out.String()), " ")
			for _, w := range tc.want {
				if !strings.Contains(text, strings.Join(strings.Fields(w), " ")) {
					t.Errorf("lacks %q:\n%s", w, out.String())
				}
			}
			if n != tc.regressions {
				t.Errorf("%d regressions, want %d:\n%s", n, tc.regressions, out.String())
			}
		})
	}
}

func TestShowLoadTable(t *testing.T) {
	var out strings.Builder
	if err := printBenchEntry(&out, loadEntry("A", 100, 40)); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"load: m/tree/a (times in ms)", "| 10 req/s | 300 | 0 | 9.80 ±0.00 |", "**40 req/s**", "3 repeats"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("lacks %q:\n%s", w, out.String())
		}
	}
}

// bench plan's load flags make a valid load phase, or say what is wrong.
func TestPlanLoadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in the error; "" valid
		// check the load made
		check func(l *bench.Load) bool
	}{
		{[]string{"--request-rate", "1,2.5,4", "--num-prompts", "50", "--input-len", "64..128", "--output-len", "100+-20", "--goodput", "ttft:500 tpot:50"}, "",
			func(l *bench.Load) bool {
				return len(l.Rates) == 3 && l.Rates[1] == 2.5 && l.Requests == 50 && l.Workload.Input.Dist == bench.DistUniform &&
					l.Workload.Output.Mean == 100 && l.Goodput.TTFTMs == 500 && l.Goodput.TPOTMs == 50
			}},
		{[]string{"--load-concurrency", "1,8", "--load-only"}, "", func(l *bench.Load) bool { return len(l.Concurrencies) == 2 }},
		{[]string{"--find-max-rate", "--goodput", "e2el:2000", "--start-rate", "4", "--arrival", "gamma", "--burstiness", "0.5"}, "",
			func(l *bench.Load) bool { return l.FindMaxRate.StartRate == 4 && l.Burstiness == 0.5 }},
		{[]string{"--prefixes", "4", "--prefix-len", "256", "--prefix-ratio", "0.5", "--request-rate", "2"}, "",
			func(l *bench.Load) bool { return l.Workload.Kind == bench.WorkloadSharedPrefix }},
		{[]string{}, "", func(l *bench.Load) bool { return l == nil }},
		{[]string{"--load-only"}, "give the load", nil},
		{[]string{"--request-rate", "fast"}, "want a number", nil},
		{[]string{"--request-rate", "1", "--goodput", "ttfb:5"}, "the keys are ttft, tpot and e2el", nil},
		{[]string{"--request-rate", "1", "--input-len", "1..x"}, "want N, MIN..MAX", nil},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var lf loadFlags
			fs := flag.NewFlagSet("bench plan", flag.ContinueOnError)
			lf.register(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			l, err := lf.load()
			if err == nil && l != nil {
				err = bench.Phases{Load: l}.Defaults().Validate()
			}
			switch {
			case tc.want != "":
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("want an error with %q, got %v", tc.want, err)
				}
			case err != nil:
				t.Fatal(err)
			case !tc.check(l):
				t.Errorf("load %+v", l)
			}
		})
	}
}
