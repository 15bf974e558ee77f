package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// compareLoad writes the comparison of a cell's load points, matched by
// their load (the same rate, or the same streams), and of the max rates
// found; it returns the verdicts and how many regressed past regression.
func compareLoad(w io.Writer, key string, a, b bench.CompactCell, threshold, regression float64) (verdicts []string, regressions int) {
	judge := func(what string, f bench.LoadFigure, ea, eb bench.Estimate) {
		j := bench.JudgeLoad(f, ea, eb, threshold)
		verdicts = append(verdicts, j.Verdict)
		if regressed(j, regression) {
			regressions++
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", key, strings.TrimSpace(what+" "+f.Name), bench.FormatEstimate(ea), bench.FormatEstimate(eb), pct(j.Change), verdictText(j))
	}
	inB := map[string]bench.PointGroup{}
	for _, g := range bench.GroupPoints(b.LoadPoints) {
		inB[g.Load()] = g
	}
	for _, ga := range bench.SortedByLoad(bench.GroupPoints(a.LoadPoints)) {
		gb, ok := inB[ga.Load()]
		if !ok {
			continue
		}
		for _, f := range bench.LoadFigures {
			ea, eb := ga.Estimate(f), gb.Estimate(f)
			if ea.N == 0 || eb.N == 0 {
				continue
			}
			judge("at "+ga.Load(), f, ea, eb)
		}
	}
	if a.MaxRate != nil && b.MaxRate != nil && a.MaxRate.Rate > 0 {
		// One value a side: the single-repeat floor applies.
		judge("", bench.MaxRateFigure, bench.Estimate95([]float64{a.MaxRate.Rate}), bench.Estimate95([]float64{b.MaxRate.Rate}))
	}
	return verdicts, regressions
}

func hasLoad(e bench.HistoryEntry) bool {
	for _, c := range e.Cells {
		if len(c.LoadPoints) > 0 {
			return true
		}
	}
	return false
}
