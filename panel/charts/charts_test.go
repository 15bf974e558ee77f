package charts

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// decode is the option as echarts.setOption gets it, decoded.
func decode(t *testing.T, o *Option) map[string]any {
	t.Helper()
	b := o.JSON()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("option is not JSON: %v\n%s", err, b)
	}
	return m
}

func series(m map[string]any) []map[string]any {
	var out []map[string]any
	for _, s := range m["series"].([]any) {
		out = append(out, s.(map[string]any))
	}
	return out
}

func f(v float64) *float64 { return &v }

func TestThroughput(t *testing.T) {
	pts := []snapshot.SeriesPoint{
		{At: 1000, TokensPerSecond: 120.5, Active: 3, Capacity: 8, Queued: 0},
		{At: 2000, TokensPerSecond: 240, Active: 6, Capacity: 8, Queued: 2},
	}
	m := decode(t, Throughput(pts, nil, nil, Dark))
	ss := series(m)
	tests := []struct {
		name  string
		axis  float64 // yAxisIndex
		value []any   // second point
	}{
		{"tokens/s", 0, []any{2000.0, 240.0}},
		{"active rows", 1, []any{2000.0, 6.0}},
		{"capacity", 1, []any{2000.0, 8.0}},
		{"queued", 1, []any{2000.0, 2.0}},
	}
	if len(ss) != len(tests) {
		t.Fatalf("%d series, want %d", len(ss), len(tests))
	}
	for i, tt := range tests {
		s := ss[i]
		if s["name"] != tt.name || s["type"] != "line" {
			t.Errorf("series %d = %v %v, want line %s", i, s["name"], s["type"], tt.name)
		}
		idx, _ := s["yAxisIndex"].(float64)
		if idx != tt.axis {
			t.Errorf("%s on y axis %v, want %v", tt.name, idx, tt.axis)
		}
		data := s["data"].([]any)
		got := data[1].(map[string]any)["value"].([]any)
		if got[0] != tt.value[0] || got[1] != tt.value[1] {
			t.Errorf("%s second point = %v, want %v", tt.name, got, tt.value)
		}
	}
	if ys := m["yAxis"].([]any); len(ys) != 2 {
		t.Errorf("%d y axes, want 2", len(ys))
	}
	if l := m["legend"].(map[string]any); l["textStyle"].(map[string]any)["color"] != Dark.Text {
		t.Errorf("legend text %v, want the palette's", l["textStyle"])
	}
	if y := m["yAxis"].([]any)[1].(map[string]any); y["axisLabel"].(map[string]any)["color"] != Dark.Text {
		t.Errorf("right axis labels %v, want the palette's", y["axisLabel"])
	}
	if m["backgroundColor"] != "transparent" || m["textStyle"].(map[string]any)["color"] != Dark.Text {
		t.Errorf("palette not applied: %v %v", m["backgroundColor"], m["textStyle"])
	}
	if x := m["xAxis"].([]any)[0].(map[string]any); x["type"] != "time" || x["min"] != float64(2000-MinWindowMs) || x["max"] != 2000.0 {
		t.Errorf("x axis %v, want time from %d to 2000", x, 2000-MinWindowMs)
	}
}

func TestMemoryStacksPerModel(t *testing.T) {
	ms := []snapshot.Model{
		{Model: "a", WeightsBytes: 2 << 30, KVBytes: 512 << 20, PrefixCacheBytes: 0},
		{Model: "<b>b</b>", WeightsBytes: 1 << 30},
	}
	m := decode(t, Memory(ms, Light))
	ss := series(m)
	want := []struct {
		name string
		a    float64
	}{{"weights", 2}, {"KV cache", 0.5}, {"prefix cache", 0}} // GiB, as the models table says
	if len(ss) != 3 {
		t.Fatalf("%d series, want 3", len(ss))
	}
	for i, w := range want {
		if ss[i]["name"] != w.name || ss[i]["stack"] != "memory" || ss[i]["type"] != "bar" {
			t.Errorf("series %d = %v", i, ss[i])
		}
		v, _ := ss[i]["data"].([]any)[0].(map[string]any)["value"].(float64)
		if v != w.a {
			t.Errorf("%s of a = %v GiB, want %v", w.name, v, w.a)
		}
	}
	if x := m["xAxis"].([]any)[0].(map[string]any); x["name"] != "GiB" || MemoryUnit(ms).Name != "GiB" {
		t.Errorf("x axis unit %v, the table's %v, want GiB for both", x["name"], MemoryUnit(ms).Name)
	}
	small := decode(t, Memory([]snapshot.Model{{Model: "s", WeightsBytes: 300 << 20}}, Light))
	if x := small["xAxis"].([]any)[0].(map[string]any); x["name"] != "MiB" {
		t.Errorf("under a GiB the unit is %v, want MiB", x["name"])
	}
	// Models are categories on the y axis (horizontal bars).
	y := m["yAxis"].([]any)[0].(map[string]any)
	cats := y["data"].([]any)
	if y["type"] != "category" || len(cats) != 2 || cats[1] != "<b>b</b>" {
		t.Errorf("y axis = %v", y)
	}
}

func TestGauge(t *testing.T) {
	tests := []struct {
		in, want float64
	}{{42.25, 42.2}, {-3, 0}, {100, 100}}
	for _, tt := range tests {
		m := decode(t, Gauge("KV cache", tt.in, Light))
		s := series(m)[0]
		v := s["data"].([]any)[0].(map[string]any)["value"]
		if v != tt.want && !(tt.want == 0 && v == nil) {
			t.Errorf("Gauge(%v) value = %v, want %v", tt.in, v, tt.want)
		}
		if s["type"] != "gauge" || s["max"] != 100.0 {
			t.Errorf("Gauge series = %v", s)
		}
	}
}

func TestTrend(t *testing.T) {
	entries := []bench.HistoryEntry{
		{ID: "r3", Profile: "smoke", Complete: true, StartedAt: 3000, Cells: []bench.CompactCell{{Key: "m/tree/a", DecodeTokensPerSecond: f(30)}}},
		{ID: "other", Profile: "standard", Complete: true, StartedAt: 2500, Cells: []bench.CompactCell{{Key: "x", DecodeTokensPerSecond: f(1)}}},
		{ID: "cancelled", Profile: "smoke", StartedAt: 2000, Cells: []bench.CompactCell{{Key: "m/tree/a", DecodeTokensPerSecond: f(1)}}},
		{ID: "r1", Profile: "smoke", Complete: true, StartedAt: 1000, Cells: []bench.CompactCell{
			{Key: "m/tree/a", DecodeTokensPerSecond: f(40)}, {Key: "m/reference/b", DecodeTokensPerSecond: f(35)},
		}},
	}
	if with := series(decode(t, Trend(entries, "smoke", bench.Figures[0], true, Light))); len(with[0]["data"].([]any)) != 3 {
		t.Errorf("with incomplete runs asked for: %d points, want 3", len(with[0]["data"].([]any)))
	}
	m := decode(t, Trend(entries, "smoke", bench.Figures[0], false, Light))
	ss := series(m)
	if len(ss) != 2 {
		t.Fatalf("%d series, want 2 (one per cell key of the profile)", len(ss))
	}
	tests := []struct {
		key  string
		want []any // values oldest first; nil where the cell was not measured
	}{
		{"m/tree/a", []any{40.0, 30.0}},
		{"m/reference/b", []any{35.0, nil}},
	}
	for i, tt := range tests {
		if ss[i]["name"] != tt.key {
			t.Errorf("series %d = %v, want %s", i, ss[i]["name"], tt.key)
		}
		data := ss[i]["data"].([]any)
		for j, w := range tt.want {
			got := data[j].(map[string]any)["value"].([]any)[1]
			if got != w {
				t.Errorf("%s run %d = %v, want %v", tt.key, j, got, w)
			}
		}
	}
	if y := m["yAxis"].([]any)[0].(map[string]any); y["name"] != "decode (tok/s)" || y["min"] != 0.0 {
		t.Errorf("y axis %v: want named, from zero", y)
	}
}

// TestTrendTimeAxis: the trend's time axis spans the runs with a margin
// either side, a twentieth of their span and at least a minute.
func TestTrendTimeAxis(t *testing.T) {
	const day = 24 * 3_600_000
	run := func(at int64) bench.HistoryEntry {
		return bench.HistoryEntry{Profile: "smoke", Complete: true, StartedAt: at, Cells: []bench.CompactCell{{Key: "k", DecodeTokensPerSecond: f(1)}}}
	}
	tests := []struct {
		name     string
		at       []int64
		min, max float64
	}{
		{"one run: a minute either side", []int64{day}, day - 60_000, day + 60_000},
		{"two runs 2 s apart stand apart", []int64{day, day + 2000}, day - 60_000, day + 62_000},
		{"runs ten days apart: half a day either side", []int64{day, 11 * day}, day / 2, 11*day + day/2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var entries []bench.HistoryEntry
			for _, at := range tt.at {
				entries = append(entries, run(at))
			}
			x := decode(t, Trend(entries, "smoke", bench.Figures[0], false, Light))["xAxis"].([]any)[0].(map[string]any)
			if x["type"] != "time" || x["min"] != tt.min || x["max"] != tt.max {
				t.Errorf("x axis %v %v..%v, want time %v..%v", x["type"], x["min"], x["max"], tt.min, tt.max)
			}
		})
	}
}

func TestTrendRuns(t *testing.T) {
	entries := []bench.HistoryEntry{
		{ID: "new", Profile: "smoke", Complete: true, StartedAt: 3},
		{ID: "cancelled", Profile: "smoke", StartedAt: 2},
		{ID: "other", Profile: "standard", StartedAt: 2},
		{ID: "old", Profile: "smoke", Complete: true, StartedAt: 1},
	}
	tests := []struct {
		profile        string
		withIncomplete bool
		want           string // run IDs, oldest first
		leftOut        int
	}{
		{"smoke", false, "old new", 1},
		{"smoke", true, "old cancelled new", 0},
		{"standard", false, "", 1},
		{"none", false, "", 0},
	}
	for _, tt := range tests {
		runs, leftOut := TrendRuns(entries, tt.profile, tt.withIncomplete)
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.ID)
		}
		if got := strings.Join(ids, " "); got != tt.want || leftOut != tt.leftOut {
			t.Errorf("TrendRuns(%s, %v) = %q, %d left out; want %q, %d", tt.profile, tt.withIncomplete, got, leftOut, tt.want, tt.leftOut)
		}
	}
}

// TestAxisNamesInside: value-axis names sit inside the chart, aligned to
// their axis, so a long name is not cut at the chart's edge.
func TestAxisNamesInside(t *testing.T) {
	tests := []struct {
		name   string
		option *Option
		want   []string // nameTextStyle.align of each y axis
	}{
		{"trend", Trend(nil, "smoke", bench.Figures[0], false, Light), []string{"left"}},
		{"throughput, two axes", Throughput(nil, nil, nil, Light), []string{"left", "right"}},
	}
	for _, tt := range tests {
		axes := decode(t, tt.option)["yAxis"].([]any)
		if len(axes) != len(tt.want) {
			t.Fatalf("%s: %d y axes, want %d", tt.name, len(axes), len(tt.want))
		}
		for i, a := range axes {
			style := a.(map[string]any)["nameTextStyle"].(map[string]any)
			if style["align"] != tt.want[i] {
				t.Errorf("%s: y axis %d name align %v, want %s", tt.name, i, style["align"], tt.want[i])
			}
		}
	}
}

// TestModelMarks: a model's load, unload and swap are vertical lines on
// every time chart, labelled with what happened and the model, the label
// on the side facing the plot's middle, along the line and bounded so it
// stays in the plot, or across the top of the plot for a mark within a
// twelfth of the axis of its start or end, where along the line it
// would read as part of the value axis; a mark outside the time axis is
// left out.
func TestModelMarks(t *testing.T) {
	tl := []snapshot.TimelinePoint{{At: 100_000}, {At: 160_000}}
	pts := []snapshot.SeriesPoint{{At: 100_000}, {At: 160_000}}
	marks := []snapshot.ModelMark{
		{At: 100_000, Model: "org/a", Kind: snapshot.MarkLoad},
		{At: 150_000, Model: "org/b", Kind: snapshot.MarkSwap},
		{At: 155_000, Model: "org/a", Kind: snapshot.MarkUnload},
		{At: 10, Model: "org/old", Kind: snapshot.MarkLoad},    // before the window
		{At: 163_000, Model: "org/c", Kind: snapshot.MarkLoad}, // after the newest point
	}
	ttft := TTFT
	type mark struct{ name, side, align string }
	want := []mark{{"load org/a", "end", "left"}, {"swap org/b", "insideEndTop", ""}, {"unload org/a", "insideEndTop", ""}, {"load org/c", "end", "right"}}
	for _, tc := range []struct {
		name   string
		option *Option
	}{
		{"throughput", Throughput(pts, nil, marks, Light)},
		{"latency", Latency(tl, marks, ttft, "ms", Light)},
		{"finish rate", FinishRate(tl, 5000, marks, Light)},
		{"cache use", CacheUse(tl, marks, Light)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := decode(t, tc.option)
			ml, _ := series(m)[0]["markLine"].(map[string]any)
			if ml == nil {
				t.Fatal("no markLine on the first series")
			}
			var got []mark
			for _, d := range ml["data"].([]any) {
				d := d.(map[string]any)
				label := d["label"].(map[string]any)
				align, _ := label["align"].(string)
				got = append(got, mark{d["name"].(string), label["position"].(string), align})
				if label["overflow"] != "truncate" || label["width"] == nil {
					t.Errorf("%s: label %v unbounded", d["name"], label)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("marks %v, want %v", got, want)
			}
			if max := m["xAxis"].([]any)[0].(map[string]any)["max"]; max != 163_000.0 {
				t.Errorf("time axis ends at %v, want the newest mark's 163000", max)
			}
			x := m["xAxis"].([]any)[0].(map[string]any)["axisLabel"].(map[string]any)
			if x["alignMinLabel"] != "left" || x["alignMaxLabel"] != "right" {
				t.Errorf("time axis labels %v: the first and last may be cut at the edges", x)
			}
		})
	}
	if _, ok := decode(t, Latency(tl, nil, ttft, "ms", Light))["series"].([]any)[0].(map[string]any)["markLine"]; ok {
		t.Error("a markLine without marks")
	}
}
