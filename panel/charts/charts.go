// Package charts builds the panel's ECharts options with go-echarts' opts
// types from the shared types. Each builder returns the option typed
// (Option), whose JSON method marshals it once for echarts.setOption;
// nothing here touches the browser, so the options are tested natively.
package charts

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/go-echarts/go-echarts/v2/types"

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

// Option is an ECharts option, built typed and marshalled once (JSON).
// Its parts are go-echarts' opts types; the top level and the series are
// this package's, holding the fields of go-echarts' charts.BaseConfiguration
// and charts.SingleSeries that the panel sets, under the same JSON names:
// the charts package brings its HTML renderer and templates
// (html/template) into the wasm. What go-echarts has no field for (the
// text colour, an axis name's style, mark labels' width...) the types
// below add by wrapping opts types.
type Option struct {
	// Animation is off: a live chart redrawn with every frame would
	// never be still.
	Animation       bool            `json:"animation"`
	BackgroundColor string          `json:"backgroundColor,omitempty"`
	Color           []string        `json:"color,omitempty"`
	TextStyle       *opts.TextStyle `json:"textStyle,omitempty"`
	Legend          opts.Legend     `json:"legend"`
	Tooltip         opts.Tooltip    `json:"tooltip"`
	Grid            []opts.Grid     `json:"grid,omitempty"`
	XAxis           []xAxis         `json:"xAxis,omitempty"`
	YAxis           []yAxis         `json:"yAxis,omitempty"`
	Series          []*seriesOption `json:"series"`
}

// JSON is the option as echarts.setOption takes it.
func (o *Option) JSON() []byte {
	b, err := json.Marshal(o)
	if err != nil {
		// The options are built from plain numbers and strings; a failure is
		// a programming error.
		panic("charts: marshal option: " + err.Error())
	}
	return b
}

// xAxis is go-echarts' opts.XAxis with the style of its name, which it
// lacks.
type xAxis struct {
	opts.XAxis
	NameTextStyle *opts.TextStyle `json:"nameTextStyle,omitempty"`
}

// yAxis is go-echarts' opts.YAxis with the style of its name.
type yAxis struct {
	opts.YAxis
	NameTextStyle *opts.TextStyle `json:"nameTextStyle,omitempty"`
}

// seriesOption is one ECharts series: the fields of go-echarts'
// charts.SingleSeries the panel sets, with their JSON names.
type seriesOption struct {
	Name           string          `json:"name,omitempty"`
	Type           string          `json:"type,omitempty"`
	Stack          string          `json:"stack,omitempty"`
	YAxisIndex     int             `json:"yAxisIndex,omitempty"`
	BarCategoryGap string          `json:"barCategoryGap,omitempty"`
	Step           string          `json:"step,omitempty"`
	ConnectNulls   types.Bool      `json:"connectNulls,omitempty"`
	ShowSymbol     types.Bool      `json:"showSymbol,omitempty"`
	SymbolSize     int             `json:"symbolSize,omitempty"`
	Data           any             `json:"data,omitempty"` // []opts.LineData, []opts.BarData, []opts.GaugeData
	ItemStyle      *opts.ItemStyle `json:"itemStyle,omitempty"`
	LineStyle      *opts.LineStyle `json:"lineStyle,omitempty"`
	AreaStyle      *opts.AreaStyle `json:"areaStyle,omitempty"`
	MarkLine       *markLine       `json:"markLine,omitempty"`
	MarkArea       *markArea       `json:"markArea,omitempty"`

	// A gauge's.
	Min       types.Int       `json:"min,omitempty"`
	Max       types.Int       `json:"max,omitempty"`
	Radius    string          `json:"radius,omitempty"`
	Progress  *opts.Progress  `json:"progress,omitempty"`
	AxisLine  *gaugeAxisLine  `json:"axisLine,omitempty"`
	AxisTick  *opts.AxisTick  `json:"axisTick,omitempty"`
	SplitLine *opts.SplitLine `json:"splitLine,omitempty"`
	AxisLabel *opts.AxisLabel `json:"axisLabel,omitempty"`
	Pointer   *opts.Pointer   `json:"pointer,omitempty"`
	Title     *opts.Title     `json:"title,omitempty"`
	Detail    *opts.Detail    `json:"detail,omitempty"`
}

// markLine is go-echarts' opts.MarkLines, silent (no hover): the data
// are markLineItems.
type markLine struct {
	opts.MarkLines
	Silent bool `json:"silent"`
}

// markLineItem is one line of a markLine: go-echarts'
// opts.MarkLineNameXAxisItem (a vertical line), or with YAxis a
// horizontal one (opts.MarkLineNameYAxisItem's field), with the line's
// own style and label, which neither has.
type markLineItem struct {
	opts.MarkLineNameXAxisItem
	YAxis     any             `json:"yAxis,omitempty"`
	LineStyle *opts.LineStyle `json:"lineStyle,omitempty"`
	Label     *markLabel      `json:"label,omitempty"`
}

// markLabel is go-echarts' opts.Label with what a mark's label needs and
// opts.Label lacks: a width to truncate it at, its distance from the line,
// and its padding as ECharts' [top, right, bottom, left] (opts.Label's is a
// string; this field hides it).
type markLabel struct {
	opts.Label
	Width    int    `json:"width,omitempty"`
	Overflow string `json:"overflow,omitempty"`
	Distance []int  `json:"distance,omitempty"`
	Padding  []int  `json:"padding,omitempty"`
}

// markArea is go-echarts' opts.MarkAreas, silent: the data are pairs of
// opts.MarkAreaData, the area's two ends.
type markArea struct {
	opts.MarkAreas
	Silent bool `json:"silent"`
}

// gaugeAxisLine is go-echarts' opts.AxisLine with a gauge's track: its
// line's colour is ECharts' list of [stop, colour], where opts.LineStyle
// has one colour.
type gaugeAxisLine struct {
	opts.AxisLine
	LineStyle *gaugeLineStyle `json:"lineStyle,omitempty"`
}

type gaugeLineStyle struct {
	opts.LineStyle
	Color [][]any `json:"color,omitempty"`
}

// newOption is an option in the palette's colours on a transparent
// background (the page's shows through), with the legend on one line
// across the top that scrolls rather than wrapping over the plot and the
// axis names on a narrow screen, and an axis tooltip.
func newOption(p Palette) *Option {
	return &Option{
		BackgroundColor: "transparent",
		Color:           p.Series,
		TextStyle:       &opts.TextStyle{Color: p.Text},
		Legend:          opts.Legend{Type: "scroll", Show: opts.Bool(true), Top: "0", TextStyle: &opts.TextStyle{Color: p.Text}},
		Tooltip:         opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"},
	}
}

// addX adds a horizontal axis in the palette's colours. Its first label is
// aligned to its left and its last to its right, so neither is cut at the
// chart's edge ("13:16:1" at 390 px).
func (o *Option) addX(x opts.XAxis, p Palette) {
	x.AxisLine, x.SplitLine, x.AxisLabel = axisLine(p), splitLine(p), axisLabel(x.AxisLabel, p)
	x.AxisLabel.AlignMinLabel, x.AxisLabel.AlignMaxLabel = "left", "right"
	o.XAxis = append(o.XAxis, xAxis{XAxis: x, NameTextStyle: &opts.TextStyle{Color: p.Text}})
}

// addY adds a vertical axis in the palette's colours, its name, drawn
// above the axis, kept inside the chart: centred on the axis line (ECharts'
// default) a long name such as "decode (tok/s)" loses its first letters at
// the left edge. The first axis sits on the left, a second on the right
// unless placed otherwise.
func (o *Option) addY(y opts.YAxis, p Palette) {
	y.AxisLine, y.SplitLine, y.AxisLabel = axisLine(p), splitLine(p), axisLabel(y.AxisLabel, p)
	name := &opts.TextStyle{Color: p.Text}
	if y.NameLocation == "" || y.NameLocation == "end" {
		name.Align = "left"
		if y.Position == "right" || (y.Position == "" && len(o.YAxis) == 1) {
			name.Align = "right"
		}
	}
	o.YAxis = append(o.YAxis, yAxis{YAxis: y, NameTextStyle: name})
}

func axisLine(p Palette) *opts.AxisLine {
	return &opts.AxisLine{LineStyle: &opts.LineStyle{Color: p.Muted}}
}

func splitLine(p Palette) *opts.SplitLine {
	return &opts.SplitLine{LineStyle: &opts.LineStyle{Color: p.Muted, Opacity: opts.Float(0.6)}}
}

// axisLabel is label in the palette's text colour; labels that would
// overlap (time labels on a phone) are left out.
func axisLabel(label *opts.AxisLabel, p Palette) *opts.AxisLabel {
	if label == nil {
		label = &opts.AxisLabel{}
	}
	label.Color, label.HideOverlap = p.Text, opts.Bool(true)
	return label
}

// legendGap is the plot's distance from a time chart's top: room for the
// legend and, under it, the value axes' names, apart (on a phone the legend
// spans the width and sits right above them).
const legendGap = "56"

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
func Throughput(series []snapshot.SeriesPoint, tl []snapshot.TimelinePoint, marks []snapshot.ModelMark, p Palette) *Option {
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
	o := newOption(p)
	o.Grid = []opts.Grid{{Left: "8", Right: "8", Top: legendGap, Bottom: "8", ContainLabel: opts.Bool(true)}}
	o.addX(x, p)
	o.addY(opts.YAxis{Name: "tok/s", Type: "value", Min: 0}, p)
	o.addY(opts.YAxis{Name: "rows", Type: "value", Min: 0, MinInterval: 1}, p)
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
	// The rows and the queue on the right axis, as of each point.
	right := func(name string, data []opts.LineData) *seriesOption {
		return &seriesOption{Name: name, Type: "line", Data: data, ShowSymbol: symbols, YAxisIndex: 1, Step: "end"}
	}
	o.Series = []*seriesOption{
		{Name: "tokens/s", Type: "line", Data: tps, ShowSymbol: symbols, AreaStyle: &opts.AreaStyle{Opacity: opts.Float(0.15)}},
		right("active rows", active),
		right("capacity", capacity),
		right("queued", queued),
	}
	o.Series[2].LineStyle = &opts.LineStyle{Type: "dashed"}
	return withMarks(o, marks, step(len(series), func(i int) int64 { return series[i].At }), p)
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
func Memory(models []snapshot.Model, p Palette) *Option {
	u := MemoryUnit(models)
	unit, div := u.Name, float64(u.Bytes)
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
	o := newOption(p)
	o.Grid = []opts.Grid{{Left: "64", Right: "24", Top: "36", Bottom: "36", ContainLabel: opts.Bool(true)}}
	// Horizontal bars: the models are categories on the y axis.
	o.addX(opts.XAxis{Type: "value", Name: unit, NameLocation: "middle", NameGap: 24}, p)
	o.addY(opts.YAxis{Type: "category", Data: names}, p)
	o.Series = []*seriesOption{
		{Name: "weights", Type: "bar", Stack: "memory", Data: weights},
		{Name: "KV cache", Type: "bar", Stack: "memory", Data: kv},
		{Name: "prefix cache", Type: "bar", Stack: "memory", Data: prefix},
	}
	return o
}

// in is b in units of div, rounded to two decimals as the table rounds.
func in(b int64, div float64) float64 {
	return math.Round(float64(b)/div*100) / 100
}

// Gauge is one cache's fill as a percentage of its capacity.
func Gauge(name string, percent float64, p Palette) *Option {
	if percent < 0 {
		percent = 0
	}
	o := newOption(p)
	// No legend; the tooltip an item's (ECharts' default).
	o.Legend, o.Tooltip = opts.Legend{Show: opts.Bool(false)}, opts.Tooltip{}
	hide := opts.Bool(false)
	o.Series = []*seriesOption{{
		Name: name, Type: "gauge", Data: []opts.GaugeData{{Name: name, Value: float64(int(percent*10)) / 10}},
		Min: opts.Int(0), Max: opts.Int(100), Radius: "95%",
		// A progress arc on a track in the theme's muted colour (ECharts'
		// default is a light grey that glares on a dark page), the value
		// in the middle; no pointer, ticks or labels.
		Progress: &opts.Progress{Show: opts.Bool(true), Width: 10},
		AxisLine: &gaugeAxisLine{LineStyle: &gaugeLineStyle{LineStyle: opts.LineStyle{Width: 10}, Color: [][]any{{1, p.Muted}}}},
		AxisTick: &opts.AxisTick{Show: hide}, SplitLine: &opts.SplitLine{Show: hide}, AxisLabel: &opts.AxisLabel{Show: hide},
		Pointer: &opts.Pointer{Show: hide}, Title: &opts.Title{Show: hide},
		Detail: &opts.Detail{Formatter: "{value}%", FontSize: 18, OffsetCenter: []string{"0", "0"}, Color: p.Text},
	}}
	return o
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
func Trend(entries []bench.HistoryEntry, profile string, f bench.Figure, withIncomplete bool, p Palette) *Option {
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
	o := newOption(p)
	o.Grid = []opts.Grid{{Left: "8", Right: "24", Top: legendGap, Bottom: "8", ContainLabel: opts.Bool(true)}}
	o.addX(x, p)
	o.addY(opts.YAxis{Name: f.Name + " (" + f.Unit + ")", Type: "value", Min: 0}, p)
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
		o.Series = append(o.Series, &seriesOption{Name: k, Type: "line", Data: data, ShowSymbol: opts.Bool(true)})
	}
	return o
}

// Lengths is the window's requests by prompt and by generation length, a
// bar each per bucket up to the longest one holding a request.
func Lengths(l *snapshot.Lengths, p Palette) *Option {
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
	o := newOption(p)
	o.Grid = []opts.Grid{{Left: "8", Right: "16", Top: legendGap, Bottom: "28", ContainLabel: opts.Bool(true)}}
	// The unit goes under the bounds, centred: at the axis's end (ECharts'
	// default) it is drawn past the chart's right edge.
	o.addX(opts.XAxis{Type: "category", Name: "tokens", NameLocation: "middle", NameGap: 26, Data: names}, p)
	o.addY(opts.YAxis{Name: "requests", Type: "value", Min: 0, MinInterval: 1}, p)
	o.Series = []*seriesOption{{Name: "prompt", Type: "bar", Data: prompt}, {Name: "generation", Type: "bar", Data: gen}}
	return o
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
