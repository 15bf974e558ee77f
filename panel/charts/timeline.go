package charts

import (
	"encoding/json"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// Latency follows one timing's p50, p95 and p99 over the timeline, one
// point per interval (a gap where no request reported it), with the model
// marks as vertical lines.
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
		p99 = append(p99, opts.LineData{Value: []any{pt.At, round1(q.P99)}})
	}
	line := charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(len(tl) < 3), ConnectNulls: opts.Bool(false)})
	c.AddSeries("p50", p50, line)
	c.AddSeries("p95", p95, line)
	c.AddSeries("p99", p99, line, charts.WithLineStyleOpts(opts.LineStyle{Type: "dashed"}))
	return withMarks(encode(c, p), marks, p)
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
	x := opts.XAxis{Type: "time", SplitNumber: 4}
	if n := len(tl); n > 0 {
		last := tl[n-1].At
		x.Max = last
		x.Min = min(tl[0].At, last-MinWindowMs)
	}
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
	var m map[string]any
	if json.Unmarshal(option, &m) != nil {
		return option
	}
	series, _ := m["series"].([]any)
	if len(series) == 0 {
		return option
	}
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
	for _, mk := range marks {
		at := float64(mk.At)
		if ranged && at < lo {
			continue // before the window: drawn outside the plot it would sit on an axis
		}
		side := "insideEndBottom" // right of a line drawn upwards
		if ranged && at > (lo+hi)/2 {
			side = "insideEndTop"
		}
		data = append(data, map[string]any{
			"name":  mk.Kind + " " + mk.Model,
			"xAxis": mk.At,
			"label": map[string]any{"position": side},
		})
	}
	if len(data) == 0 {
		return option
	}
	first := series[0].(map[string]any)
	first["markLine"] = map[string]any{
		"symbol":    []any{"none", "none"},
		"silent":    true,
		"lineStyle": map[string]any{"color": p.Muted, "type": "dotted", "width": 1},
		"label":     map[string]any{"show": true, "formatter": "{b}", "color": p.Text, "fontSize": 10},
		"data":      data,
	}
	out, _ := json.Marshal(m)
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
