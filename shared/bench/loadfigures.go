package bench

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/mlx-bun/mlx-metrics/shared/plural"
)

// LoadFigure is one figure of a load point, as tables, comparisons and
// the CSV name it.
type LoadFigure struct {
	Key, Name, Unit string
	HigherIsBetter  bool
	Get             func(LoadPoint) float64
}

// LoadFigures are the figures a load point's row shows, in order.
var LoadFigures = []LoadFigure{
	{"request_throughput", "req/s", "/s", true, func(p LoadPoint) float64 { return p.RequestThroughput }},
	{"output_throughput", "output tok/s", "tok/s", true, func(p LoadPoint) float64 { return p.OutputThroughput }},
	{"ttft_p50", "TTFT p50", "ms", false, func(p LoadPoint) float64 { return p.TTFT.at(p.TTFT.Median) }},
	{"ttft_p99", "TTFT p99", "ms", false, func(p LoadPoint) float64 { return p.TTFT.at(p.TTFT.P99) }},
	{"tpot_p50", "TPOT p50", "ms", false, func(p LoadPoint) float64 { return p.TPOT.at(p.TPOT.Median) }},
	{"tpot_p99", "TPOT p99", "ms", false, func(p LoadPoint) float64 { return p.TPOT.at(p.TPOT.P99) }},
	{"itl_p50", "ITL p50", "ms", false, func(p LoadPoint) float64 { return p.ITL.at(p.ITL.Median) }},
	{"e2el_p50", "E2EL p50", "ms", false, func(p LoadPoint) float64 { return p.E2EL.at(p.E2EL.Median) }},
	{"e2el_p99", "E2EL p99", "ms", false, func(p LoadPoint) float64 { return p.E2EL.at(p.E2EL.P99) }},
	{"goodput", "goodput", "/s", true, func(p LoadPoint) float64 {
		if p.Goodput == nil {
			return math.NaN()
		}
		return *p.Goodput
	}},
}

// at is v, or NaN when d holds no value (nothing to compare).
func (d Dist) at(v float64) float64 {
	if d.Count == 0 {
		return math.NaN()
	}
	return v
}

// Estimate is a figure over a point's repeats: mean, sample standard
// deviation, coefficient of variation and the 95 % confidence interval of
// the mean (Student's t); with one repeat the interval is the value.
type Estimate struct {
	N        int     `json:"n"`
	Mean     float64 `json:"mean"`
	Std      float64 `json:"std"`
	CV       float64 `json:"cv"`
	Lo       float64 `json:"lo"`
	Hi       float64 `json:"hi"`
	Interval bool    `json:"interval"` // false with one repeat
}

// Estimate95 estimates the mean of xs (NaNs left out).
func Estimate95(xs []float64) Estimate {
	var v []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	e := Estimate{N: len(v)}
	if e.N == 0 {
		return Estimate{Mean: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	}
	for _, x := range v {
		e.Mean += x
	}
	e.Mean /= float64(e.N)
	e.Lo, e.Hi = e.Mean, e.Mean
	if e.N < 2 {
		return e
	}
	for _, x := range v {
		e.Std += (x - e.Mean) * (x - e.Mean)
	}
	e.Std = math.Sqrt(e.Std / float64(e.N-1))
	if e.Mean != 0 {
		e.CV = e.Std / math.Abs(e.Mean)
	}
	h := tCritical95(e.N-1) * e.Std / math.Sqrt(float64(e.N))
	e.Lo, e.Hi, e.Interval = e.Mean-h, e.Mean+h, true
	return e
}

// tCritical95 is Student's t two-sided 95 % critical value for df degrees
// of freedom (1.96 past 30).
func tCritical95(df int) float64 {
	t := []float64{0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	if df < len(t) {
		return t[df]
	}
	return 1.96
}

// PointGroup is one point of a sweep and its repeats.
type PointGroup struct {
	Point       int
	OfferedRate float64
	Concurrency int
	Search      string
	Repeats     []LoadPoint
}

// Load names the point's load: "4 req/s", "8 streams", "4 req/s (cap 8)".
func (g PointGroup) Load() string {
	if g.OfferedRate == 0 {
		return plural.Count(g.Concurrency, "stream", "streams")
	}
	s := fmt.Sprintf("%.4g req/s", g.OfferedRate)
	if g.Concurrency > 0 {
		s += fmt.Sprintf(" (cap %d)", g.Concurrency)
	}
	return s
}

// Estimate is figure f over the point's repeats.
func (g PointGroup) Estimate(f LoadFigure) Estimate {
	xs := make([]float64, len(g.Repeats))
	for i, p := range g.Repeats {
		xs[i] = f.Get(p)
	}
	return Estimate95(xs)
}

// GroupPoints gathers each point's repeats, in the order measured.
func GroupPoints(points []LoadPoint) []PointGroup {
	var out []PointGroup
	at := map[int]int{}
	for _, p := range points {
		i, ok := at[p.Point]
		if !ok {
			i = len(out)
			at[p.Point] = i
			out = append(out, PointGroup{Point: p.Point, OfferedRate: p.OfferedRate, Concurrency: p.Concurrency, Search: p.Search})
		}
		out[i].Repeats = append(out[i].Repeats, p)
	}
	return out
}

// SortedByLoad is groups ordered by their load (a search measures out of
// order): rates, then concurrencies, ascending.
func SortedByLoad(groups []PointGroup) []PointGroup {
	s := append([]PointGroup(nil), groups...)
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].OfferedRate != s[j].OfferedRate {
			return s[i].OfferedRate < s[j].OfferedRate
		}
		return s[i].Concurrency < s[j].Concurrency
	})
	return s
}

// LoadTable is a cell's load points as a Markdown table, one row per
// point by load (the mean ± the 95 % interval's half-width over repeats),
// then the max rate found.
func LoadTable(points []LoadPoint, mr *MaxRate) string {
	var b strings.Builder
	b.WriteString("| load | requests | errors")
	for _, f := range LoadFigures {
		fmt.Fprintf(&b, " | %s", f.Name)
	}
	b.WriteString(" | lag p99 ms | |\n|---|--:|--:" + strings.Repeat("|--:", len(LoadFigures)+1) + "|---|\n")
	for _, g := range SortedByLoad(GroupPoints(points)) {
		req, errs := 0, 0
		var notes []string
		var lag []float64
		for _, p := range g.Repeats {
			req += p.Requests
			errs += p.Errors
			lag = append(lag, p.Lag.P99)
			if p.Saturated && !slices.Contains(notes, "saturated") {
				notes = append(notes, "saturated")
			}
		}
		if len(g.Repeats) > 1 {
			notes = append(notes, fmt.Sprintf("%d repeats", len(g.Repeats)))
		}
		fmt.Fprintf(&b, "| %s | %d | %d", g.Load(), req, errs)
		for _, f := range LoadFigures {
			fmt.Fprintf(&b, " | %s", FormatEstimate(g.Estimate(f)))
		}
		fmt.Fprintf(&b, " | %s | %s |\n", FormatEstimate(Estimate95(lag)), strings.Join(notes, ", "))
	}
	if mr != nil {
		fmt.Fprintf(&b, "\nMax rate under the SLO (goodput at least %.0f %% of the requests, not saturated): **%.4g req/s**", mr.MinShare*100, mr.Rate)
		if mr.Note != "" {
			fmt.Fprintf(&b, " (%s)", mr.Note)
		}
		b.WriteString(".\n")
	}
	return b.String()
}

// FormatEstimate is "12.3", or "12.3 ±0.4" with repeats; "–" for none.
func FormatEstimate(e Estimate) string {
	if e.N == 0 || math.IsNaN(e.Mean) {
		return "–"
	}
	s := formatFigure(e.Mean)
	if e.Interval {
		s += " ±" + formatFigure((e.Hi-e.Lo)/2)
	}
	return s
}

func formatFigure(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
