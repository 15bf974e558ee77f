package charts

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// MinP99Requests is the least number of requests a p99 is drawn from:
// below it the p99 is the slowest request, the p95's line most of the
// time, and two lines on one read as one. A 5 s interval holds that many
// only past 4 requests a second, so the p99 is the minute's to each point
// (snapshot.Minute) wherever the backend sends one.
const MinP99Requests = 20

// Timing picks one timing's quantiles out of a timeline point and out of
// its minute.
type Timing struct {
	Interval func(snapshot.TimelinePoint) *snapshot.Quantiles
	Minute   func(*snapshot.Minute) *snapshot.Quantiles
}

// The timings the latency charts follow.
var (
	TTFT  = Timing{func(p snapshot.TimelinePoint) *snapshot.Quantiles { return p.TTFTMs }, func(m *snapshot.Minute) *snapshot.Quantiles { return m.TTFTMs }}
	TPOT  = Timing{func(p snapshot.TimelinePoint) *snapshot.Quantiles { return p.TPOTMs }, func(m *snapshot.Minute) *snapshot.Quantiles { return m.TPOTMs }}
	E2E   = Timing{func(p snapshot.TimelinePoint) *snapshot.Quantiles { return p.TotalMs }, func(m *snapshot.Minute) *snapshot.Quantiles { return m.TotalMs }}
	Queue = Timing{func(p snapshot.TimelinePoint) *snapshot.Quantiles { return p.QueueMs }, func(m *snapshot.Minute) *snapshot.Quantiles { return m.QueueMs }}
)

// P99Name is the latency charts' p99 series: over the minute to each
// point where the timeline carries minutes, else over the interval.
func P99Name(tl []snapshot.TimelinePoint) string {
	if hasMinutes(tl) {
		return "p99 (1 min)"
	}
	return "p99"
}

func hasMinutes(tl []snapshot.TimelinePoint) bool {
	for _, pt := range tl {
		if pt.Minute != nil {
			return true
		}
	}
	return false
}

// Latency follows one timing's p50, p95 and p99 over the timeline, one
// point per interval (a gap where no request reported it, shaded where
// none finished), with the model marks as vertical lines. The p50 and
// p95 are the interval's; the p99 the minute's to the interval (an older
// backend's timeline has no minutes: then the interval's), drawn where
// it holds MinP99Requests or more.
func Latency(tl []snapshot.TimelinePoint, marks []snapshot.ModelMark, get Timing, unit string, p Palette) []byte {
	c := charts.NewLine()
	c.SetGlobalOptions(timeGlobals(tl, unit, p)...)
	minutes := hasMinutes(tl)
	p50 := make([]opts.LineData, len(tl))
	p95 := make([]opts.LineData, len(tl))
	p99 := make([]opts.LineData, len(tl))
	for i, pt := range tl {
		var v50, v95, v99 any
		if q := get.Interval(pt); q != nil {
			v50, v95 = round1(q.P50), round1(q.P95)
			if !minutes && pt.Requests >= MinP99Requests {
				v99 = round1(q.P99)
			}
		}
		if m := pt.Minute; minutes && m != nil && m.Requests >= MinP99Requests {
			if q := get.Minute(m); q != nil {
				v99 = round1(q.P99)
			}
		}
		p50[i] = opts.LineData{Value: []any{pt.At, v50}}
		p95[i] = opts.LineData{Value: []any{pt.At, v95}}
		p99[i] = opts.LineData{Value: []any{pt.At, v99}}
	}
	line := charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(len(tl) < 3), ConnectNulls: opts.Bool(false)})
	c.AddSeries("p50", p50, line, charts.WithItemStyleOpts(opts.ItemStyle{Color: p.color(0)}))
	c.AddSeries("p95", p95, line, charts.WithItemStyleOpts(opts.ItemStyle{Color: p.color(1)}))
	c.AddSeries(P99Name(tl), p99, line,
		charts.WithLineStyleOpts(opts.LineStyle{Type: "dashed"}), charts.WithItemStyleOpts(opts.ItemStyle{Color: p.color(2)}))
	return withQuiet(withMarks(encode(c, p), marks, p), tl, p)
}

// Phases is the prefill time (time to first token less the queue) and the
// decode time (the rest of the request), p50 and p95 of each interval.
func Phases(tl []snapshot.TimelinePoint, marks []snapshot.ModelMark, p Palette) []byte {
	c := charts.NewLine()
	c.SetGlobalOptions(timeGlobals(tl, "ms", p)...)
	series := []struct {
		name string
		get  func(snapshot.TimelinePoint) *snapshot.Quantiles
		q    func(*snapshot.Quantiles) float64
		dash bool
	}{
		{"prefill p50", func(pt snapshot.TimelinePoint) *snapshot.Quantiles { return pt.PrefillMs }, func(q *snapshot.Quantiles) float64 { return q.P50 }, false},
		{"prefill p95", func(pt snapshot.TimelinePoint) *snapshot.Quantiles { return pt.PrefillMs }, func(q *snapshot.Quantiles) float64 { return q.P95 }, true},
		{"decode p50", func(pt snapshot.TimelinePoint) *snapshot.Quantiles { return pt.DecodeMs }, func(q *snapshot.Quantiles) float64 { return q.P50 }, false},
		{"decode p95", func(pt snapshot.TimelinePoint) *snapshot.Quantiles { return pt.DecodeMs }, func(q *snapshot.Quantiles) float64 { return q.P95 }, true},
	}
	for i, s := range series {
		data := make([]opts.LineData, len(tl))
		for j, pt := range tl {
			var v any
			if q := s.get(pt); q != nil {
				v = round1(s.q(q))
			}
			data[j] = opts.LineData{Value: []any{pt.At, v}}
		}
		style := opts.LineStyle{}
		if s.dash {
			style.Type = "dashed"
		}
		c.AddSeries(s.name, data, charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(len(tl) < 3)}),
			charts.WithLineStyleOpts(style), charts.WithItemStyleOpts(opts.ItemStyle{Color: p.color(i / 2)}))
	}
	return withQuiet(withMarks(encode(c, p), marks, p), tl, p)
}

// TokenRates is prompt and generation tokens per second of each interval:
// the tokens of the requests that finished in it over its width.
func TokenRates(tl []snapshot.TimelinePoint, intervalMs int64, marks []snapshot.ModelMark, p Palette) []byte {
	c := charts.NewLine()
	c.SetGlobalOptions(timeGlobals(tl, "tok/s", p)...)
	per := 1000 / float64(max(intervalMs, 1))
	prompt := make([]opts.LineData, len(tl))
	gen := make([]opts.LineData, len(tl))
	for i, pt := range tl {
		prompt[i] = opts.LineData{Value: []any{pt.At, round1(float64(pt.PromptTokens) * per)}}
		gen[i] = opts.LineData{Value: []any{pt.At, round1(float64(pt.GenerationTokens) * per)}}
	}
	line := charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(len(tl) < 3)})
	c.AddSeries("prompt tokens/s", prompt, line)
	c.AddSeries("generation tokens/s", gen, line, charts.WithAreaStyleOpts(opts.AreaStyle{Opacity: opts.Float(0.12)}))
	return withMarks(encode(c, p), marks, p)
}

// Quiet is the stretches of intervals in which no request finished, as
// [from, to) in epoch ms: where a latency line breaks for want of
// requests rather than for a fault. The newest interval, still filling,
// is not one.
func Quiet(tl []snapshot.TimelinePoint) []Span {
	var out []Span
	for i := 0; i < len(tl); i++ {
		if tl[i].Requests > 0 {
			continue
		}
		j := i
		for j+1 < len(tl) && tl[j+1].Requests == 0 {
			j++
		}
		end := tl[j].At
		if j+1 < len(tl) {
			end = tl[j+1].At
		}
		if end > tl[i].At {
			out = append(out, Span{From: tl[i].At, To: end})
		}
		i = j
	}
	return out
}

// withQuiet shades each Quiet stretch, unlabelled: at one request a
// second a few 5 s intervals in ten minutes see none finish, and a label
// on each piled into one unreadable strip; the chart's caption says once
// what the shade means.
func withQuiet(option []byte, tl []snapshot.TimelinePoint, p Palette) []byte {
	var areas []any
	for _, q := range Quiet(tl) {
		areas = append(areas, []any{map[string]any{"xAxis": q.From}, map[string]any{"xAxis": q.To}})
	}
	return withArea(option, areas, p.Muted, 0.18, p)
}

// Span is a stretch of time in epoch ms; To zero is open (still going).
type Span struct{ From, To int64 }

// WithBench shades each time a bench run held the GPU (an open span to the
// end of the axis), labelled so: serving figures of that time are the
// benchmark's. Spans outside the axis are left out, those across its start
// cut at it.
func WithBench(option []byte, runs []Span, p Palette) []byte {
	if len(runs) == 0 {
		return option
	}
	var m map[string]any
	if json.Unmarshal(option, &m) != nil {
		return option
	}
	lo, hi, ok := timeRange(m)
	runs = slices.SortedFunc(slices.Values(runs), func(a, b Span) int { return cmp.Compare(a.From, b.From) })
	// As with the marks, a label closer than a twelfth of the axis to the
	// last one would run into it ("bencbench run"): its area goes unnamed.
	minGap, lastLabelled := (hi-lo)/12, math.Inf(-1)
	var areas []any
	for _, r := range runs {
		from, to := float64(r.From), float64(r.To)
		if r.To == 0 {
			to = max(from, hi)
		}
		if r.From == 0 || to < from || ok && (to < lo || from > hi) {
			continue
		}
		if ok {
			from = max(from, lo)
		}
		name := ""
		if !ok || from-lastLabelled >= minGap {
			name, lastLabelled = "bench run", from
		}
		areas = append(areas, []any{map[string]any{"name": name, "xAxis": from}, map[string]any{"xAxis": to}})
	}
	return withArea(option, areas, p.color(4), 0.10, p)
}

// withArea adds areas (pairs of {xAxis} ends, the first named) to the
// option's last series as a mark area of colour; a series of its own
// holds no data, so its legend entry would show nothing.
func withArea(option []byte, areas []any, colour string, opacity float64, p Palette) []byte {
	if len(areas) == 0 {
		return option
	}
	return editSeries(option, func(m map[string]any, series []any) bool {
		last := series[len(series)-1].(map[string]any)
		ma, _ := last["markArea"].(map[string]any)
		if ma == nil {
			ma = map[string]any{"silent": true, "data": []any{}}
		}
		// Each area carries its own style, so a quiet stretch and a bench run
		// on one series look apart.
		for _, a := range areas {
			pair := a.([]any)
			first := pair[0].(map[string]any)
			first["itemStyle"] = map[string]any{"color": colour, "opacity": opacity}
			label := map[string]any{"color": p.Text, "fontSize": 10, "position": "insideTop"}
			if name, _ := first["name"].(string); name == "" {
				label["show"] = false
			}
			first["label"] = label
			ma["data"] = append(ma["data"].([]any), pair)
		}
		last["markArea"] = ma
		return true
	})
}

// FinishRate is requests per second in each interval, stacked by finish
// reason.
func FinishRate(tl []snapshot.TimelinePoint, intervalMs int64, marks []snapshot.ModelMark, p Palette) []byte {
	c := charts.NewBar()
	c.SetGlobalOptions(timeGlobals(tl, "req/s", p)...)
	per := 1000 / float64(max(intervalMs, 1))
	series := []struct {
		name string
		get  func(snapshot.FinishCounts) int
	}{
		{"stop", func(f snapshot.FinishCounts) int { return f.Stop }},
		{"length", func(f snapshot.FinishCounts) int { return f.Length }},
		{"cancelled", func(f snapshot.FinishCounts) int { return f.Cancelled }},
		{"error", func(f snapshot.FinishCounts) int { return f.Error }},
	}
	stack := charts.WithBarChartOpts(opts.BarChart{Stack: "finish", BarCategoryGap: "10%"})
	for _, s := range series {
		data := make([]opts.BarData, len(tl))
		for i, pt := range tl {
			data[i] = opts.BarData{Value: []any{pt.At, round2(float64(s.get(pt.ByFinish)) * per)}}
		}
		c.AddSeries(s.name, data, stack)
	}
	return withMarks(encode(c, p), marks, p)
}

// PrefixName is the cache chart's prefix hit rate series: over the minute
// to each point where the timeline carries minutes (as Grafana reads
// rate(hits[1m]) / rate(queries[1m])), else over the interval, whose few
// lookups swing it from 0 to 95 %.
func PrefixName(tl []snapshot.TimelinePoint) string {
	if hasMinutes(tl) {
		return "prefix hit rate (1 min)"
	}
	return "prefix hit rate"
}

// CacheUse is KV cache use as of each interval and the prefix cache's hit
// rate (PrefixName) over the timeline, both in percent.
func CacheUse(tl []snapshot.TimelinePoint, marks []snapshot.ModelMark, p Palette) []byte {
	c := charts.NewLine()
	g := timeGlobals(tl, "%", p)
	g = append(g, charts.WithYAxisOpts(opts.YAxis{Name: "%", Type: "value", Min: 0, Max: 100}))
	c.SetGlobalOptions(g...)
	kv := make([]opts.LineData, len(tl))
	hit := make([]opts.LineData, len(tl))
	minutes := hasMinutes(tl)
	for i, pt := range tl {
		kv[i] = opts.LineData{Value: []any{pt.At, percentOrNil(pt.KVUsage)}}
		rate := pt.PrefixHitRate
		if minutes {
			rate = nil
			if pt.Minute != nil {
				rate = pt.Minute.PrefixHitRate
			}
		}
		hit[i] = opts.LineData{Value: []any{pt.At, percentOrNil(rate)}}
	}
	line := charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(len(tl) < 3)})
	c.AddSeries("KV cache use", kv, line, charts.WithAreaStyleOpts(opts.AreaStyle{Opacity: opts.Float(0.12)}))
	c.AddSeries(PrefixName(tl), hit, line)
	return withMarks(encode(c, p), marks, p)
}

// timeGlobals are the options every timeline chart shares: legend on top,
// axis tooltip, a time axis over the timeline (at least MinWindowMs), and
// a value axis from zero named with unit.
func timeGlobals(tl []snapshot.TimelinePoint, unit string, p Palette) []charts.GlobalOpts {
	x := timelineAxis(tl)
	return []charts.GlobalOpts{
		charts.WithLegendOpts(legend()),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithGridOpts(opts.Grid{Left: "8", Right: "16", Top: legendGap, Bottom: "8", ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(x),
		charts.WithYAxisOpts(opts.YAxis{Name: unit, Type: "value", Min: 0}),
	}
}

// markEdge is the share of the time axis at either end (a twelfth: past
// a minute of data, more than the first 5 s interval, wherever in it the
// load fell) in which a mark's label lies across the plot's top rather
// than along its line: along a line that close to the plot's edge, it
// read as part of the value axis and its ticks (the load at the start of
// the first minutes).
const markEdge = 12

// markLabelPx bounds a mark's label: along its line, the plot's height
// at 390 px, so a long model name does not run past the plot onto the
// time axis's labels; across the top, about a fifth of a chart at 1440 px.
const (
	markLabelAlongPx  = 110
	markLabelAcrossPx = 160
)

// withMarks adds the model marks of the time axis's window to the first
// series as vertical lines, labelled with the model and what happened. A
// label runs along its line on the side facing the middle of the plot (to
// the right of a mark in the left half, to the left of one in the right
// half), so it never covers the value axes' labels at either edge; a mark
// within a twelfth of the axis of either end has
// its label across the top of the plot instead, towards the middle, clear
// of the axes.
func withMarks(option []byte, marks []snapshot.ModelMark, p Palette) []byte {
	if len(marks) == 0 {
		return option
	}
	return editSeries(option, func(m map[string]any, series []any) bool {
		lo, hi, ranged := timeRange(m)
		if ranged {
			step := firstStep(series[0])
			// A mark after the newest point (a load in the interval still
			// filling) stretches the axis to it rather than falling off; so
			// does one less than a step of the data before the first point
			// (the load that started the traffic, in the interval before its
			// first event's), which would fall off as the time it reached
			// the interval's boundary did.
			for _, mk := range marks {
				at := float64(mk.At)
				hi = max(hi, at)
				if at < lo && lo-at <= step {
					lo = at
				}
			}
			x := m["xAxis"].([]any)[0].(map[string]any)
			x["min"], x["max"] = lo, hi
		}
		data := make([]any, 0, len(marks))
		// Labels closer than a twelfth of the axis to the last one labelled
		// would run into it; those marks keep their line, unlabelled.
		minGap := (hi - lo) / 12
		lastLabelled := math.Inf(-1)
		for _, mk := range marks {
			at := float64(mk.At)
			if ranged && at < lo {
				continue // before the window: drawn outside the plot it would sit on an axis
			}
			right := !ranged || at <= (lo+hi)/2 // the label's side of the line
			label := map[string]any{"position": "insideEndBottom", "width": markLabelAlongPx, "overflow": "truncate"}
			if !right {
				label["position"] = "insideEndTop"
			}
			if edge := (hi - lo) / markEdge; ranged && (at-lo <= edge || hi-at <= edge) {
				// Across the top, inside the plot: "end" is past the line's
				// top end, and a negative distance brings it back in, a line
				// down, under a bench run's label (WithBench: insideTop).
				label = map[string]any{"position": "end", "distance": []any{0, -18}, "verticalAlign": "top",
					"align": "left", "padding": []any{0, 0, 0, 4}, "width": markLabelAcrossPx, "overflow": "truncate"}
				if !right {
					label["align"], label["padding"] = "right", []any{0, 4, 0, 0}
				}
			}
			if ranged && at-lastLabelled < minGap {
				label["show"] = false
			} else {
				lastLabelled = at
			}
			data = append(data, map[string]any{
				"name":  mk.Kind + " " + mk.Model,
				"xAxis": mk.At,
				"label": label,
			})
		}
		if len(data) == 0 {
			return false
		}
		first := series[0].(map[string]any)
		first["markLine"] = map[string]any{
			"symbol":    []any{"none", "none"},
			"silent":    true,
			"lineStyle": map[string]any{"color": p.Muted, "type": "dotted", "width": 1},
			"label":     map[string]any{"show": true, "formatter": "{b}", "color": p.Text, "fontSize": 10},
			"data":      data,
		}
		return true
	})
}

// firstStep is the time between a series' first two points, 0 with
// fewer.
func firstStep(series any) float64 {
	s, _ := series.(map[string]any)
	data, _ := s["data"].([]any)
	at := func(i int) (float64, bool) {
		d, _ := data[i].(map[string]any)
		v, _ := d["value"].([]any)
		if len(v) == 0 {
			return 0, false
		}
		x, ok := v[0].(float64)
		return x, ok
	}
	if len(data) < 2 {
		return 0
	}
	a, ok1 := at(0)
	b, ok2 := at(1)
	if !ok1 || !ok2 || b < a {
		return 0
	}
	return b - a
}

// editSeries decodes an encoded option, lets edit change it and encodes it
// again; an option without series, or one edit left alone (it returned
// false), comes back as it was.
func editSeries(option []byte, edit func(m map[string]any, series []any) bool) []byte {
	var m map[string]any
	if json.Unmarshal(option, &m) != nil {
		return option
	}
	series, _ := m["series"].([]any)
	if len(series) == 0 || !edit(m, series) {
		return option
	}
	out, err := json.Marshal(m)
	if err != nil {
		return option
	}
	return out
}

// timeRange is the first x axis's min and max, when the option sets both.
func timeRange(m map[string]any) (lo, hi float64, ok bool) {
	axes, _ := m["xAxis"].([]any)
	if len(axes) == 0 {
		return 0, 0, false
	}
	x, _ := axes[0].(map[string]any)
	lo, ok1 := x["min"].(float64)
	hi, ok2 := x["max"].(float64)
	return lo, hi, ok1 && ok2 && hi > lo
}

func percentOrNil(v *float64) any {
	if v == nil {
		return nil
	}
	return round1(*v * 100)
}

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }
func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }

// timelineAxis is the time axis every timeline chart shares.
func timelineAxis(tl []snapshot.TimelinePoint) opts.XAxis {
	return timeAxis(len(tl), func(i int) int64 { return tl[i].At })
}
