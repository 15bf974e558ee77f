package charts

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// MinP99Requests is the least number of requests an interval needs for
// its p99 to be drawn: below it the p99 is the interval's slowest request,
// the p95's line most of the time, and two lines on one read as one.
const MinP99Requests = 20

// Latency follows one timing's p50, p95 and p99 over the timeline, one
// point per interval (a gap where no request reported it, shaded and
// labelled "no requests" where none finished), with the model marks as
// vertical lines. The p99 is drawn where an interval held MinP99Requests
// or more, and the p95 over it, so neither hides the other.
func Latency(tl []snapshot.TimelinePoint, marks []snapshot.ModelMark, get func(snapshot.TimelinePoint) *snapshot.Quantiles, unit string, p Palette) []byte {
	c := charts.NewLine()
	c.SetGlobalOptions(timeGlobals(tl, unit, p)...)
	var p50, p95, p99 []opts.LineData
	for _, pt := range tl {
		q := get(pt)
		if q == nil {
			p50 = append(p50, opts.LineData{Value: []any{pt.At, nil}})
			p95 = append(p95, opts.LineData{Value: []any{pt.At, nil}})
			p99 = append(p99, opts.LineData{Value: []any{pt.At, nil}})
			continue
		}
		p50 = append(p50, opts.LineData{Value: []any{pt.At, round1(q.P50)}})
		p95 = append(p95, opts.LineData{Value: []any{pt.At, round1(q.P95)}})
		var v99 any
		if pt.Requests >= MinP99Requests {
			v99 = round1(q.P99)
		}
		p99 = append(p99, opts.LineData{Value: []any{pt.At, v99}})
	}
	line := charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(len(tl) < 3), ConnectNulls: opts.Bool(false)})
	c.AddSeries("p50", p50, line, charts.WithItemStyleOpts(opts.ItemStyle{Color: p.color(0)}))
	c.AddSeries(fmt.Sprintf("p99 (intervals of %d+ requests)", MinP99Requests), p99, line,
		charts.WithLineStyleOpts(opts.LineStyle{Type: "dashed"}), charts.WithItemStyleOpts(opts.ItemStyle{Color: p.color(2)}))
	c.AddSeries("p95", p95, line, charts.WithItemStyleOpts(opts.ItemStyle{Color: p.color(1)}))
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

// withQuiet shades each stretch of intervals in which no request finished,
// labelled so, where a latency line breaks for want of requests rather
// than for a fault.
func withQuiet(option []byte, tl []snapshot.TimelinePoint, p Palette) []byte {
	var areas []any
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
			areas = append(areas, []any{map[string]any{"name": "no requests", "xAxis": tl[i].At}, map[string]any{"xAxis": end}})
		}
		i = j
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
			first["label"] = map[string]any{"color": p.Text, "fontSize": 10, "position": "insideTop"}
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

// CacheUse is KV cache use and the prefix cache's hit rate over the
// timeline, both in percent.
func CacheUse(tl []snapshot.TimelinePoint, marks []snapshot.ModelMark, p Palette) []byte {
	c := charts.NewLine()
	g := timeGlobals(tl, "%", p)
	g = append(g, charts.WithYAxisOpts(opts.YAxis{Name: "%", Type: "value", Min: 0, Max: 100}))
	c.SetGlobalOptions(g...)
	kv := make([]opts.LineData, len(tl))
	hit := make([]opts.LineData, len(tl))
	for i, pt := range tl {
		kv[i] = opts.LineData{Value: []any{pt.At, percentOrNil(pt.KVUsage)}}
		hit[i] = opts.LineData{Value: []any{pt.At, percentOrNil(pt.PrefixHitRate)}}
	}
	line := charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(len(tl) < 3)})
	c.AddSeries("KV cache use", kv, line, charts.WithAreaStyleOpts(opts.AreaStyle{Opacity: opts.Float(0.12)}))
	c.AddSeries("prefix hit rate", hit, line)
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

// withMarks adds the model marks of the time axis's window to the first
// series as vertical lines, labelled with the model and what happened. A
// label runs along its line on the side facing the middle of the plot (to
// the right of a mark in the left half, to the left of one in the right
// half), so it never covers the value axes' labels at either edge.
func withMarks(option []byte, marks []snapshot.ModelMark, p Palette) []byte {
	if len(marks) == 0 {
		return option
	}
	return editSeries(option, func(m map[string]any, series []any) bool {
		lo, hi, ranged := timeRange(m)
		if ranged {
			// A mark after the newest point (a load in the interval still
			// filling) stretches the axis to it rather than falling off.
			for _, mk := range marks {
				hi = max(hi, float64(mk.At))
			}
			m["xAxis"].([]any)[0].(map[string]any)["max"] = hi
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
			side := "insideEndBottom" // right of a line drawn upwards
			if ranged && at > (lo+hi)/2 {
				side = "insideEndTop"
			}
			label := map[string]any{"position": side}
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
