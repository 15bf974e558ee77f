package charts

import (
	"cmp"
	"math"
	"slices"

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
func Latency(tl []snapshot.TimelinePoint, marks []snapshot.ModelMark, get Timing, unit string, p Palette) *Option {
	o := timeOption(tl, unit, p)
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
	line := func(name string, data []opts.LineData, i int) *seriesOption {
		return &seriesOption{Name: name, Type: "line", Data: data, ShowSymbol: opts.Bool(len(tl) < 3), ConnectNulls: opts.Bool(false),
			ItemStyle: &opts.ItemStyle{Color: p.color(i)}}
	}
	o.Series = []*seriesOption{line("p50", p50, 0), line("p95", p95, 1), line(P99Name(tl), p99, 2)}
	o.Series[2].LineStyle = &opts.LineStyle{Type: "dashed"}
	return withQuiet(withMarks(o, marks, timelineStep(tl), p), tl, p)
}

// Phases is the prefill time (time to first token less the queue) and the
// decode time (the rest of the request), p50 and p95 of each interval.
func Phases(tl []snapshot.TimelinePoint, marks []snapshot.ModelMark, p Palette) *Option {
	o := timeOption(tl, "ms", p)
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
		style := &opts.LineStyle{}
		if s.dash {
			style.Type = "dashed"
		}
		o.Series = append(o.Series, &seriesOption{Name: s.name, Type: "line", Data: data, ShowSymbol: opts.Bool(len(tl) < 3),
			LineStyle: style, ItemStyle: &opts.ItemStyle{Color: p.color(i / 2)}})
	}
	return withQuiet(withMarks(o, marks, timelineStep(tl), p), tl, p)
}

// TokenRates is prompt and generation tokens per second of each interval:
// the tokens of the requests that finished in it over its width.
func TokenRates(tl []snapshot.TimelinePoint, intervalMs int64, marks []snapshot.ModelMark, p Palette) *Option {
	o := timeOption(tl, "tok/s", p)
	per := 1000 / float64(max(intervalMs, 1))
	prompt := make([]opts.LineData, len(tl))
	gen := make([]opts.LineData, len(tl))
	for i, pt := range tl {
		prompt[i] = opts.LineData{Value: []any{pt.At, round1(float64(pt.PromptTokens) * per)}}
		gen[i] = opts.LineData{Value: []any{pt.At, round1(float64(pt.GenerationTokens) * per)}}
	}
	symbols := opts.Bool(len(tl) < 3)
	o.Series = []*seriesOption{
		{Name: "prompt tokens/s", Type: "line", Data: prompt, ShowSymbol: symbols},
		{Name: "generation tokens/s", Type: "line", Data: gen, ShowSymbol: symbols, AreaStyle: &opts.AreaStyle{Opacity: opts.Float(0.12)}},
	}
	return withMarks(o, marks, timelineStep(tl), p)
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
func withQuiet(o *Option, tl []snapshot.TimelinePoint, p Palette) *Option {
	var areas []area
	for _, q := range Quiet(tl) {
		areas = append(areas, area{from: float64(q.From), to: float64(q.To)})
	}
	return withArea(o, areas, p.Muted, 0.18, p)
}

// area is a stretch of the time axis to shade, named or not.
type area struct {
	name     string
	from, to float64
}

// Span is a stretch of time in epoch ms; To zero is open (still going).
type Span struct{ From, To int64 }

// WithBench shades each time a bench run held the GPU (an open span to the
// end of the axis), labelled so: serving figures of that time are the
// benchmark's. Spans outside the axis are left out, those across its start
// cut at it.
func WithBench(o *Option, runs []Span, p Palette) *Option {
	if len(runs) == 0 {
		return o
	}
	lo, hi, ok := timeRange(o)
	runs = slices.SortedFunc(slices.Values(runs), func(a, b Span) int { return cmp.Compare(a.From, b.From) })
	// As with the marks, a label closer than a twelfth of the axis to the
	// last one would run into it ("bencbench run"): its area goes unnamed.
	minGap, lastLabelled := (hi-lo)/12, math.Inf(-1)
	var areas []area
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
		areas = append(areas, area{name: name, from: from, to: to})
	}
	return withArea(o, areas, p.color(4), 0.10, p)
}

// withArea adds areas to the option's last series as a mark area of
// colour; a series of its own holds no data, so its legend entry would
// show nothing. An option without series is left as it is.
func withArea(o *Option, areas []area, colour string, opacity float64, p Palette) *Option {
	if len(areas) == 0 || len(o.Series) == 0 {
		return o
	}
	last := o.Series[len(o.Series)-1]
	if last.MarkArea == nil {
		last.MarkArea = &markArea{Silent: true, MarkAreas: opts.MarkAreas{Data: []any{}}}
	}
	// Each area carries its own style, so a quiet stretch and a bench run
	// on one series look apart.
	for _, a := range areas {
		label := &opts.Label{Color: p.Text, FontSize: 10, Position: "insideTop"}
		if a.name == "" {
			label.Show = opts.Bool(false)
		}
		from := opts.MarkAreaData{Name: a.name, XAxis: a.from, MarkAreaStyle: opts.MarkAreaStyle{
			Label: label, ItemStyle: &opts.ItemStyle{Color: colour, Opacity: opts.Float(float32(opacity))}}}
		last.MarkArea.Data = append(last.MarkArea.Data, []opts.MarkAreaData{from, {XAxis: a.to}})
	}
	return o
}

// FinishRate is requests per second in each interval, stacked by finish
// reason.
func FinishRate(tl []snapshot.TimelinePoint, intervalMs int64, marks []snapshot.ModelMark, p Palette) *Option {
	o := timeOption(tl, "req/s", p)
	per := 1000 / float64(max(intervalMs, 1))
	reasons := []struct {
		name string
		get  func(snapshot.FinishCounts) int
	}{
		{"stop", func(f snapshot.FinishCounts) int { return f.Stop }},
		{"length", func(f snapshot.FinishCounts) int { return f.Length }},
		{"cancelled", func(f snapshot.FinishCounts) int { return f.Cancelled }},
		{"error", func(f snapshot.FinishCounts) int { return f.Error }},
	}
	for _, s := range reasons {
		data := make([]opts.BarData, len(tl))
		for i, pt := range tl {
			data[i] = opts.BarData{Value: []any{pt.At, round2(float64(s.get(pt.ByFinish)) * per)}}
		}
		o.Series = append(o.Series, &seriesOption{Name: s.name, Type: "bar", Stack: "finish", BarCategoryGap: "10%", Data: data})
	}
	return withMarks(o, marks, timelineStep(tl), p)
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
func CacheUse(tl []snapshot.TimelinePoint, marks []snapshot.ModelMark, p Palette) *Option {
	o := timeOption(tl, "%", p)
	o.YAxis[0].Max = 100
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
	symbols := opts.Bool(len(tl) < 3)
	o.Series = []*seriesOption{
		{Name: "KV cache use", Type: "line", Data: kv, ShowSymbol: symbols, AreaStyle: &opts.AreaStyle{Opacity: opts.Float(0.12)}},
		{Name: PrefixName(tl), Type: "line", Data: hit, ShowSymbol: symbols},
	}
	return withMarks(o, marks, timelineStep(tl), p)
}

// timeOption is what every timeline chart shares: legend on top, axis
// tooltip, a time axis over the timeline (at least MinWindowMs), and a
// value axis from zero named with unit.
func timeOption(tl []snapshot.TimelinePoint, unit string, p Palette) *Option {
	o := newOption(p)
	o.Grid = []opts.Grid{{Left: "8", Right: "16", Top: legendGap, Bottom: "8", ContainLabel: opts.Bool(true)}}
	o.addX(timelineAxis(tl), p)
	o.addY(opts.YAxis{Name: unit, Type: "value", Min: 0}, p)
	return o
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
func withMarks(o *Option, marks []snapshot.ModelMark, step float64, p Palette) *Option {
	if len(marks) == 0 || len(o.Series) == 0 {
		return o
	}
	lo, hi, ranged := timeRange(o)
	if ranged {
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
		label := &markLabel{Label: opts.Label{Position: "insideEndBottom"}, Width: markLabelAlongPx, Overflow: "truncate"}
		if !right {
			label.Position = "insideEndTop"
		}
		if edge := (hi - lo) / markEdge; ranged && (at-lo <= edge || hi-at <= edge) {
			// Across the top, inside the plot: "end" is past the line's
			// top end, and a negative distance brings it back in, a line
			// down, under a bench run's label (WithBench: insideTop).
			label = &markLabel{Label: opts.Label{Position: "end", VerticalAlign: "top", Align: "left"},
				Distance: []int{0, -18}, Padding: []int{0, 0, 0, 4}, Width: markLabelAcrossPx, Overflow: "truncate"}
			if !right {
				label.Align, label.Padding = "right", []int{0, 4, 0, 0}
			}
		}
		if ranged && at-lastLabelled < minGap {
			label.Show = opts.Bool(false)
		} else {
			lastLabelled = at
		}
		data = append(data, markLineItem{MarkLineNameXAxisItem: opts.MarkLineNameXAxisItem{Name: mk.Kind + " " + mk.Model, XAxis: mk.At}, Label: label})
	}
	if len(data) == 0 {
		return o
	}
	if ranged {
		o.XAxis[0].Min, o.XAxis[0].Max = lo, hi
	}
	o.Series[0].MarkLine = &markLine{Silent: true, MarkLines: opts.MarkLines{Data: data, MarkLineStyle: opts.MarkLineStyle{
		Symbol:    []string{"none", "none"},
		LineStyle: &opts.LineStyle{Color: p.Muted, Type: "dotted", Width: 1},
		Label:     &opts.Label{Show: opts.Bool(true), Formatter: "{b}", Color: p.Text, FontSize: 10},
	}}}
	return o
}

// step is the time between the first two of n points at times at(i), the
// data's step, 0 with fewer (or out of order).
func step(n int, at func(i int) int64) float64 {
	if n < 2 || at(1) < at(0) {
		return 0
	}
	return float64(at(1) - at(0))
}

// timelineStep is the timeline's step (its intervals' width).
func timelineStep(tl []snapshot.TimelinePoint) float64 {
	return step(len(tl), func(i int) int64 { return tl[i].At })
}

// timeRange is the first x axis's min and max, when the option sets both.
func timeRange(o *Option) (lo, hi float64, ok bool) {
	if len(o.XAxis) == 0 {
		return 0, 0, false
	}
	lo, ok1 := number(o.XAxis[0].Min)
	hi, ok2 := number(o.XAxis[0].Max)
	return lo, hi, ok1 && ok2 && hi > lo
}

// number is an axis bound (opts' Min and Max are any) as a float64.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
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
