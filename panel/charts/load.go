package charts

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// LoadAxis is what a load curve's x axis reads.
type LoadAxis int

const (
	// ByRequestRate is the achieved requests/s (RequestThroughput).
	ByRequestRate LoadAxis = iota
	// ByOutputTokens is the output tokens/s (OutputThroughput).
	ByOutputTokens
)

// Name is the axis's name as the chart writes it.
func (a LoadAxis) Name() string {
	if a == ByOutputTokens {
		return "output tokens/s"
	}
	return "achieved requests/s"
}

func (a LoadAxis) of(p bench.LoadPoint) float64 {
	if a == ByOutputTokens {
		return p.OutputThroughput
	}
	return p.RequestThroughput
}

// LoadFigure is the latency a load curve follows.
type LoadFigure struct {
	Name string // "TTFT"
	Get  func(bench.LoadPoint) bench.Dist
	// Bound is the SLO's bound on it in ms, 0 when the SLO sets none.
	Bound func(bench.SLO) float64
}

// The figures the Benchmarks view draws against load.
var (
	LoadTTFT = LoadFigure{"TTFT", func(p bench.LoadPoint) bench.Dist { return p.TTFT }, func(s bench.SLO) float64 { return s.TTFTMs }}
	LoadTPOT = LoadFigure{"TPOT", func(p bench.LoadPoint) bench.Dist { return p.TPOT }, func(s bench.SLO) float64 { return s.TPOTMs }}
)

// CurveRun is one run's cell on a load chart. Label tells the runs of a
// comparison apart in series names ("A", "B"); a lone run has none.
type CurveRun struct {
	Label string
	Cell  bench.CompactCell
}

// prefix is what the run's names start with: "A " in a comparison.
func (r CurveRun) prefix() string {
	if r.Label == "" {
		return ""
	}
	return r.Label + " "
}

// bound is the run's SLO bound on f in ms, 0 when it has none.
func (r CurveRun) bound(f LoadFigure) float64 {
	if r.Cell.SLO == nil {
		return 0
	}
	return f.Bound(*r.Cell.SLO)
}

// curvePoint is one offered load of a sweep: its repeats' mean.
type curvePoint struct {
	offered     float64 // requests/s; 0 for a closed loop
	concurrency int
	x, p50, p99 float64
	saturated   bool // any repeat was
	repeats     int
}

// name says the offered load, as the tooltip shows it.
func (c curvePoint) name() string {
	if c.offered == 0 && c.concurrency > 0 {
		return fmt.Sprintf("%d concurrent", c.concurrency)
	}
	s := fmt.Sprintf("%g req/s offered", c.offered)
	if c.repeats > 1 {
		s += fmt.Sprintf(" (mean of %d repeats)", c.repeats)
	}
	return s
}

// curvePoints groups a cell's points by offered load (rate and cap, or
// concurrency) and averages each group's repeats, x and figures alike,
// ordered by the load offered: the curve then follows the sweep, bending
// back where a saturated server carried less than at a lighter load.
// Repeats without a completed request are left out of the mean, and a
// load none of whose repeats completed one is not drawn.
func curvePoints(points []bench.LoadPoint, f LoadFigure, axis LoadAxis) []curvePoint {
	type key struct {
		offered     float64
		concurrency int
	}
	var order []key
	groups := map[key]*curvePoint{}
	for _, p := range points {
		k := key{p.OfferedRate, p.Concurrency}
		g := groups[k]
		if g == nil {
			g = &curvePoint{offered: p.OfferedRate, concurrency: p.Concurrency}
			groups[k] = g
			order = append(order, k)
		}
		g.saturated = g.saturated || p.Saturated
		d := f.Get(p)
		if d.Count == 0 {
			continue
		}
		g.x += axis.of(p)
		g.p50 += d.Median
		g.p99 += d.P99
		g.repeats++
	}
	out := make([]curvePoint, 0, len(order))
	for _, k := range order {
		g := groups[k]
		if g.repeats == 0 {
			continue
		}
		n := float64(g.repeats)
		g.x, g.p50, g.p99 = g.x/n, g.p50/n, g.p99/n
		out = append(out, *g)
	}
	slices.SortStableFunc(out, func(a, b curvePoint) int {
		return cmp.Or(cmp.Compare(a.offered, b.offered), cmp.Compare(a.concurrency, b.concurrency))
	})
	return out
}

// maxRateX is where the max rate found sits on axis: the rate itself on
// the request axis; on the tokens axis the output tokens/s measured at
// that offered rate (the mean of its repeats), false when no point was.
func maxRateX(c bench.CompactCell, axis LoadAxis) (float64, bool) {
	m := c.MaxRate
	if m == nil || m.Rate <= 0 {
		return 0, false
	}
	if axis == ByRequestRate {
		return m.Rate, true
	}
	sum, n := 0.0, 0
	for _, p := range c.LoadPoints {
		if p.OfferedRate == m.Rate {
			sum += p.OutputThroughput
			n++
		}
	}
	return sum / float64(max(n, 1)), n > 0
}

// LoadCurve follows f's p50 and p99 against the load each run's cell
// carried (axis), one colour per run, the p99 dashed; a saturated load
// is a triangle. Each run's SLO bound on f is a horizontal line (one,
// named for no run, when the runs share it) and the max rate its search
// found a vertical one; an axis stretches to a mark beyond its data.
func LoadCurve(runs []CurveRun, f LoadFigure, axis LoadAxis, p Palette) *Option {
	o := newOption(p)
	// The tooltip is each point's: its name says the load offered.
	o.Tooltip.Trigger = "item"
	// The x axis's name goes under its labels, as the lengths chart's.
	o.Grid = []opts.Grid{{Left: "8", Right: "24", Top: legendGap, Bottom: "28", ContainLabel: opts.Bool(true)}}
	// ECharts leaves a markLine beyond the data's extent off the plot: an
	// axis is stretched when a mark lies past its data.
	var dataX, dataY, markX, markY float64
	marks := make([][]any, len(runs)) // markLineItems, on each run's p50
	// An SLO line per bound, named for its run unless every run has it.
	shared := true
	for _, r := range runs {
		shared = shared && r.bound(f) == runs[0].bound(f)
	}
	var drawn []float64
	for i, r := range runs {
		pts := curvePoints(r.Cell.LoadPoints, f, axis)
		p50 := make([]opts.LineData, len(pts))
		p99 := make([]opts.LineData, len(pts))
		for j, pt := range pts {
			symbol := ""
			if pt.saturated {
				symbol = "triangle"
			}
			p50[j] = opts.LineData{Name: pt.name(), Value: []any{round2(pt.x), round1(pt.p50)}, Symbol: symbol}
			p99[j] = opts.LineData{Name: pt.name(), Value: []any{round2(pt.x), round1(pt.p99)}, Symbol: symbol}
			dataX, dataY = max(dataX, pt.x), max(dataY, pt.p50, pt.p99)
		}
		// The chart's title and axis name the figure: the legend stays
		// short enough for a phone's width.
		line := func(name string, data []opts.LineData) *seriesOption {
			return &seriesOption{Name: r.prefix() + name, Type: "line", Data: data, ShowSymbol: opts.Bool(true), SymbolSize: 7,
				ItemStyle: &opts.ItemStyle{Color: p.color(i)}}
		}
		o.Series = append(o.Series, line("p50", p50), line("p99", p99))
		o.Series[len(o.Series)-1].LineStyle = &opts.LineStyle{Type: "dashed"}

		if b := r.bound(f); b > 0 && !slices.Contains(drawn, b) {
			drawn = append(drawn, b)
			markY = max(markY, b)
			name := "SLO " + format.Ms(b)
			if !shared {
				name = r.prefix() + name
			}
			marks[i] = append(marks[i], markLineItem{MarkLineNameXAxisItem: opts.MarkLineNameXAxisItem{Name: name}, YAxis: b,
				LineStyle: &opts.LineStyle{Color: p.color(4), Type: "dashed", Width: 1.5},
				// At the left, where the latencies are low: the curves
				// climb through it to the right.
				Label: &markLabel{Label: opts.Label{Position: "insideStartTop", Color: p.color(4)}},
			})
		}
		if x, ok := maxRateX(r.Cell, axis); ok {
			markX = max(markX, x)
			marks[i] = append(marks[i], markLineItem{
				MarkLineNameXAxisItem: opts.MarkLineNameXAxisItem{Name: r.prefix() + "max " + format.Requests(r.Cell.MaxRate.Rate), XAxis: round2(x)},
				LineStyle:             &opts.LineStyle{Color: p.color(i), Type: "dotted", Width: 1.5},
				Label:                 &markLabel{Label: opts.Label{Position: "insideEndBottom", Color: p.Text}},
			})
		}
	}
	x := opts.XAxis{Type: "value", Name: axis.Name(), NameLocation: "middle", NameGap: 26, Min: 0}
	if markX > dataX {
		x.Max = niceCeil(markX * 1.1)
	}
	y := opts.YAxis{Type: "value", Name: f.Name + " (ms)", Min: 0}
	if markY > dataY {
		y.Max = niceCeil(markY * 1.1)
	}
	o.addX(x, p)
	o.addY(y, p)
	for i, data := range marks {
		if len(data) > 0 {
			o.Series[2*i].MarkLine = &markLine{Silent: true, MarkLines: opts.MarkLines{Data: data, MarkLineStyle: opts.MarkLineStyle{
				Symbol: []string{"none", "none"},
				Label:  &opts.Label{Show: opts.Bool(true), Formatter: "{b}", FontSize: 10},
			}}}
		}
	}
	return o
}

// niceCeil rounds v up to a round number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5,
// 6 or 8 times a power of ten), where an axis stretched to a mark ends.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 0
	}
	mag := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if v <= m*mag+1e-9*mag {
			return m * mag
		}
	}
	return 10 * mag
}
