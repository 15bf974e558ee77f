// Package charts builds the panel's ECharts options with go-echarts from
// the shared types. Each builder returns the option as JSON, ready for
// echarts.setOption; nothing here touches the browser, so the options are
// tested natively.
package charts

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// Palette carries the theme's colours into the options: ECharts draws on a
// canvas, so CSS custom properties do not reach it by themselves.
type Palette struct {
	Text   string // labels and legends
	Muted  string // axis lines and split lines
	Series []string
}

// color is the palette's i-th series colour (cycling).
func (p Palette) color(i int) string {
	if len(p.Series) == 0 {
		return ""
	}
	return p.Series[i%len(p.Series)]
}

// Light and Dark are the defaults when the host sets no custom properties.
var (
	Light = Palette{Text: "#1f2328", Muted: "#d0d7de", Series: []string{"#2f6fdb", "#e07b00", "#1a7f37", "#a040c0", "#cf222e", "#0a8a8a"}}
	Dark  = Palette{Text: "#e6edf3", Muted: "#30363d", Series: []string{"#6ea8fe", "#ffa657", "#56d364", "#d2a8ff", "#ff7b72", "#39c5cf"}}
)

type jsonOption interface {
	Validate()
	JSON() map[string]any
}

// encode validates the chart, applies the palette, and marshals it.
// go-echarts has no field for a few ECharts options (backgroundColor,
// textStyle, axis and legend colours); they are set on the generic form.
func encode(c jsonOption, p Palette) []byte {
	c.Validate()
	raw, err := json.Marshal(c.JSON())
	if err != nil {
		// The options are built from plain numbers and strings; a failure is
		// a programming error.
		panic(fmt.Sprintf("charts: marshal option: %v", err))
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		panic(fmt.Sprintf("charts: option: %v", err))
	}
	m["backgroundColor"] = "transparent"
	m["textStyle"] = map[string]any{"color": p.Text}
	m["animation"] = false
	if len(p.Series) > 0 {
		m["color"] = p.Series
	}
	if l, ok := m["legend"].(map[string]any); ok {
		l["textStyle"] = map[string]any{"color": p.Text}
		// One line that scrolls rather than wrapping over the plot and the
		// axis names on a narrow screen.
		l["type"] = "scroll"
	}
	for _, key := range []string{"xAxis", "yAxis"} {
		axes, _ := m[key].([]any)
		for i, a := range axes {
			if axis, ok := a.(map[string]any); ok {
				styleAxis(axis, p)
				if key == "yAxis" {
					alignName(axis, i)
				} else {
					keepEndLabelsIn(axis)
				}
			}
		}
	}
	b, _ := json.Marshal(m)
	return b
}

// styleAxis gives an axis the palette's line and label colours.
func styleAxis(a map[string]any, p Palette) {
	a["axisLine"] = map[string]any{"lineStyle": map[string]any{"color": p.Muted}}
	a["splitLine"] = map[string]any{"lineStyle": map[string]any{"color": p.Muted, "opacity": 0.6}}
	a["nameTextStyle"] = map[string]any{"color": p.Text}
	label, _ := a["axisLabel"].(map[string]any)
	if label == nil {
		label = map[string]any{}
	}
	label["color"] = p.Text
	// Labels that would overlap (time labels on a phone) are left out.
	label["hideOverlap"] = true
	a["axisLabel"] = label
}

// keepEndLabelsIn aligns a horizontal axis's first label to its left
// and its last to its right, so neither is cut at the chart's edge
// ("13:16:1" at 390 px).
func keepEndLabelsIn(a map[string]any) {
	label := a["axisLabel"].(map[string]any)
	label["alignMinLabel"] = "left"
	label["alignMaxLabel"] = "right"
}

// alignName keeps a value axis's name, drawn above the axis, inside the
// chart: centred on the axis line (ECharts' default) a long name such as
// "decode (tok/s)" loses its first letters at the left edge. The first
// axis sits on the left, a second on the right unless placed otherwise.
func alignName(a map[string]any, i int) {
	if loc, _ := a["nameLocation"].(string); loc != "" && loc != "end" {
		return
	}
	align := "left"
	if pos, _ := a["position"].(string); pos == "right" || (pos == "" && i == 1) {
		align = "right"
	}
	a["nameTextStyle"].(map[string]any)["align"] = align
}

// legendGap is the plot's distance from a time chart's top: room for the
// legend and, under it, the value axes' names, apart (on a phone the legend
// spans the width and sits right above them).
const legendGap = "56"

func legend() opts.Legend {
	return opts.Legend{Show: opts.Bool(true), Top: "0"}
}

// SchedulerPerInterval reports whether the timeline carries its
// intervals' scheduler (snapshot.IntervalScheduler), which a backend older
// than that addition does not send.
func SchedulerPerInterval(tl []snapshot.TimelinePoint) bool {
	for _, pt := range tl {
		if pt.Scheduler != nil {
			return true
		}
	}
	return false
}

// Throughput is the serving chart: tokens per second on the left axis,
// active rows, capacity and queue depth on the right, with the model
// marks. Where the timeline carries its intervals' scheduler it draws
// those, a point per interval over the whole window, as the charts beside
// it: the interval's mean tokens/s, its rows and queue as of its last
// sample, a gap where none was sampled. Else it draws the series' samples
// (the last 120: two minutes at a sample a second), on the timeline's
// window when there is one.
func Throughput(series []snapshot.SeriesPoint, tl []snapshot.TimelinePoint, marks []snapshot.ModelMark, p Palette) []byte {
	if SchedulerPerInterval(tl) {
		series = nil
		for _, pt := range tl {
			sp := snapshot.SeriesPoint{At: pt.At, TokensPerSecond: math.NaN()} // NaN: no sample, a gap
			if sc := pt.Scheduler; sc != nil {
				sp = snapshot.SeriesPoint{At: pt.At, TokensPerSecond: math.Round(sc.TokensPerSecond*10) / 10,
					Active: sc.Active, Capacity: sc.Capacity, Queued: sc.Queued}
			}
			series = append(series, sp)
		}
	}
	x := timeAxis(len(series), func(i int) int64 { return series[i].At })
	if len(tl) > 0 {
		x = timelineAxis(tl)
		if n := len(series); n > 0 {
			x.Max = max(x.Max.(int64), series[n-1].At)
		}
	}
	c := charts.NewLine()
	c.SetGlobalOptions(
		charts.WithLegendOpts(legend()),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithGridOpts(opts.Grid{Left: "8", Right: "8", Top: legendGap, Bottom: "8", ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(x),
		charts.WithYAxisOpts(opts.YAxis{Name: "tok/s", Type: "value", Min: 0}),
	)
	c.ExtendYAxis(opts.YAxis{Name: "rows", Type: "value", Min: 0, MinInterval: 1})
	tps := make([]opts.LineData, len(series))
	active := make([]opts.LineData, len(series))
	capacity := make([]opts.LineData, len(series))
	queued := make([]opts.LineData, len(series))
	for i, pt := range series {
		if math.IsNaN(pt.TokensPerSecond) {
			for _, s := range [][]opts.LineData{tps, active, capacity, queued} {
				s[i] = opts.LineData{Value: []any{pt.At, nil}}
			}
			continue
		}
		tps[i] = opts.LineData{Value: []any{pt.At, pt.TokensPerSecond}}
		active[i] = opts.LineData{Value: []any{pt.At, pt.Active}}
		capacity[i] = opts.LineData{Value: []any{pt.At, pt.Capacity}}
		queued[i] = opts.LineData{Value: []any{pt.At, pt.Queued}}
	}
	// A lone sample is a dot, not an invisible line.
	symbols := opts.Bool(len(series) < 3)
	noSymbol := charts.WithLineChartOpts(opts.LineChart{ShowSymbol: symbols})
	right := charts.WithLineChartOpts(opts.LineChart{ShowSymbol: symbols, YAxisIndex: 1, Step: "end"})
	c.AddSeries("tokens/s", tps, noSymbol, charts.WithAreaStyleOpts(opts.AreaStyle{Opacity: opts.Float(0.15)}))
	c.AddSeries("active rows", active, right)
	c.AddSeries("capacity", capacity, right, charts.WithLineStyleOpts(opts.LineStyle{Type: "dashed"}))
	c.AddSeries("queued", queued, right)
	return withMarks(encode(c, p), marks, p)
}

// MinWindowMs is the least time span the serving chart shows, so that a
// few samples do not stretch over the whole axis.
const MinWindowMs = 60_000

// timeAxis is the x axis over n samples at times at(i): their span, at
// least MinWindowMs, ending at the newest.
func timeAxis(n int, at func(i int) int64) opts.XAxis {
	x := opts.XAxis{Type: "time", SplitNumber: 4}
	if n > 0 {
		last := at(n - 1)
		x.Max = last
		x.Min = min(at(0), last-MinWindowMs)
	}
	return x
}

// MemoryUnit is the unit of the memory chart, the one of the largest
// model's total; the models table shows its memory columns in it too, so
// the table and the chart read alike.
func MemoryUnit(models []snapshot.Model) format.SizeUnit {
	totals := make([]int64, len(models))
	for i, m := range models {
		totals[i] = m.WeightsBytes + m.KVBytes + m.PrefixCacheBytes
	}
	return format.UnitOf(totals...)
}

// Memory is a stacked bar per model: weights, KV cache and prefix cache,
// in MemoryUnit.
func Memory(models []snapshot.Model, p Palette) []byte {
	u := MemoryUnit(models)
	unit, div := u.Name, float64(u.Bytes)
	c := charts.NewBar()
	c.SetGlobalOptions(
		charts.WithLegendOpts(legend()),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithGridOpts(opts.Grid{Left: "64", Right: "24", Top: "36", Bottom: "36", ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: unit, NameLocation: "middle", NameGap: 24}),
		charts.WithYAxisOpts(opts.YAxis{Type: "category"}),
	)
	names := make([]string, len(models))
	weights := make([]opts.BarData, len(models))
	kv := make([]opts.BarData, len(models))
	prefix := make([]opts.BarData, len(models))
	for i, m := range models {
		names[i] = m.Model
		weights[i] = opts.BarData{Value: in(m.WeightsBytes, div)}
		kv[i] = opts.BarData{Value: in(m.KVBytes, div)}
		prefix[i] = opts.BarData{Value: in(m.PrefixCacheBytes, div)}
	}
	c.SetXAxis(names) // category data; moved to the y axis below
	stack := charts.WithBarChartOpts(opts.BarChart{Stack: "memory"})
	c.AddSeries("weights", weights, stack)
	c.AddSeries("KV cache", kv, stack)
	c.AddSeries("prefix cache", prefix, stack)
	c.XYReversal()
	return encode(c, p)
}

// in is b in units of div, rounded to two decimals as the table rounds.
func in(b int64, div float64) float64 {
	return math.Round(float64(b)/div*100) / 100
}

// Gauge is one cache's fill as a percentage of its capacity.
func Gauge(name string, percent float64, p Palette) []byte {
	if percent < 0 {
		percent = 0
	}
	c := charts.NewGauge()
	c.AddSeries(name, []opts.GaugeData{{Name: name, Value: float64(int(percent*10)) / 10}})
	b := encode(c, p)
	// Gauge styling go-echarts does not model: progress arc, value label.
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	m["legend"] = map[string]any{"show": false}
	if s, ok := m["series"].([]any); ok && len(s) == 1 {
		g := s[0].(map[string]any)
		g["min"], g["max"] = 0, 100
		g["progress"] = map[string]any{"show": true, "width": 10}
		// The track in the theme's muted colour: ECharts' default is a light
		// grey that glares on a dark page.
		g["axisLine"] = map[string]any{"lineStyle": map[string]any{"width": 10, "color": []any{[]any{1, p.Muted}}}}
		g["axisTick"] = map[string]any{"show": false}
		g["splitLine"] = map[string]any{"show": false}
		g["axisLabel"] = map[string]any{"show": false}
		g["pointer"] = map[string]any{"show": false}
		g["title"] = map[string]any{"show": false}
		g["detail"] = map[string]any{"formatter": "{value}%", "fontSize": 18, "offsetCenter": []any{0, 0}, "color": p.Text}
		g["radius"] = "95%"
	}
	out, _ := json.Marshal(m)
	return out
}

// TrendRuns is the runs a trend of profile shows, oldest first, and how
// many of the profile's runs it leaves out because they did not complete
// (cancelled, failed or with a cell that stopped): a partial run's figures
// would read as a regression, so they join only when withIncomplete asks.
func TrendRuns(entries []bench.HistoryEntry, profile string, withIncomplete bool) (runs []bench.HistoryEntry, leftOut int) {
	for _, e := range entries {
		switch {
		case e.Profile != profile:
		case e.Complete || withIncomplete:
			runs = append(runs, e)
		default:
			leftOut++
		}
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].StartedAt < runs[j].StartedAt })
	return runs, leftOut
}

// trendMarginMs is the least margin the trend's time axis leaves either
// side of its runs.
const trendMarginMs = 60_000

// Trend follows one figure of each of a profile's cells across runs (oldest
// left), one line per cell key; a cell not measured in a run leaves a gap.
// Runs that did not complete (cancelled, failed cells, unstable figures)
// are left out unless withIncomplete. The value axis starts at zero, so a
// small change looks small, and the time axis spans the runs.
func Trend(entries []bench.HistoryEntry, profile string, f bench.Figure, withIncomplete bool, p Palette) []byte {
	runs, _ := TrendRuns(entries, profile, withIncomplete)
	var keys []string
	seen := map[string]bool{}
	for _, r := range runs {
		for _, c := range r.Cells {
			if !seen[c.Key] {
				seen[c.Key] = true
				keys = append(keys, c.Key)
			}
		}
	}
	x := opts.XAxis{Type: "time", SplitNumber: 4}
	if n := len(runs); n > 0 {
		// The axis spans the runs with a margin either side, a twentieth of
		// their span and at least a minute: one run is not shown over days,
		// and runs a few seconds apart stand apart rather than on one dot.
		first, last := runs[0].StartedAt, runs[n-1].StartedAt
		margin := max((last-first)/20, trendMarginMs)
		x.Min, x.Max = first-margin, last+margin
	}
	c := charts.NewLine()
	c.SetGlobalOptions(
		charts.WithLegendOpts(legend()),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithGridOpts(opts.Grid{Left: "8", Right: "24", Top: legendGap, Bottom: "8", ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(x),
		charts.WithYAxisOpts(opts.YAxis{Name: f.Name + " (" + f.Unit + ")", Type: "value", Min: 0}),
	)
	for _, k := range keys {
		data := make([]opts.LineData, 0, len(runs))
		for _, r := range runs {
			var v any // null: not measured in this run
			for _, cell := range r.Cells {
				if cell.Key == k {
					if x := f.Get(cell); x != nil {
						v = *x
					}
				}
			}
			data = append(data, opts.LineData{Value: []any{r.StartedAt, v}})
		}
		c.AddSeries(k, data, charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true)}))
	}
	return encode(c, p)
}

// Lengths is the window's requests by prompt and by generation length, a
// bar each per bucket up to the longest one holding a request.
func Lengths(l *snapshot.Lengths, p Palette) []byte {
	last := 0
	for i := range l.Prompt {
		if l.Prompt[i] > 0 || (i < len(l.Generation) && l.Generation[i] > 0) {
			last = i
		}
	}
	names := make([]string, last+1)
	prompt := make([]opts.BarData, last+1)
	gen := make([]opts.BarData, last+1)
	for i := range names {
		if i < len(l.Bounds) {
			names[i] = "≤" + tokens(l.Bounds[i])
		} else {
			names[i] = ">" + tokens(l.Bounds[len(l.Bounds)-1])
		}
		prompt[i] = opts.BarData{Value: l.Prompt[i]}
		if i < len(l.Generation) {
			gen[i] = opts.BarData{Value: l.Generation[i]}
		}
	}
	c := charts.NewBar()
	c.SetGlobalOptions(
		charts.WithLegendOpts(legend()),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		// The unit goes under the bounds, centred: at the axis's end (ECharts'
		// default) it is drawn past the chart's right edge.
		charts.WithGridOpts(opts.Grid{Left: "8", Right: "16", Top: legendGap, Bottom: "28", ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: "tokens", NameLocation: "middle", NameGap: 26}),
		charts.WithYAxisOpts(opts.YAxis{Name: "requests", Type: "value", Min: 0, MinInterval: 1}),
	)
	c.SetXAxis(names)
	c.AddSeries("prompt", prompt)
	c.AddSeries("generation", gen)
	return encode(c, p)
}

// tokens is a bound as a short count: 500, 1k, 20k, 1M.
func tokens(n int64) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}
