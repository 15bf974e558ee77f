package charts

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// points are n intervals of 5 s from at 0, with requests each and the
// given TTFT quantiles (nil for an interval where none finished).
func points(requests []int, q *snapshot.Quantiles) []snapshot.TimelinePoint {
	tl := make([]snapshot.TimelinePoint, len(requests))
	for i, n := range requests {
		tl[i] = snapshot.TimelinePoint{At: int64(i) * 5000, Requests: n}
		if n > 0 {
			tl[i].TTFTMs = q
		}
	}
	return tl
}

func values(s map[string]any) []any {
	var out []any
	for _, d := range s["data"].([]any) {
		v := d.(map[string]any)["value"].([]any)
		out = append(out, v[1])
	}
	return out
}

// The p99 is drawn only where an interval held enough requests to have
// one apart from the slowest, and the p95 is drawn over it; stretches
// with no request are shaded and said.
func TestLatencyTails(t *testing.T) {
	q := &snapshot.Quantiles{P50: 100, P95: 300, P99: 300}
	tl := points([]int{3, 0, 0, 40, 40}, q)
	m := decode(t, Latency(tl, nil, func(p snapshot.TimelinePoint) *snapshot.Quantiles { return p.TTFTMs }, "ms", Dark))
	ss := series(m)
	if len(ss) != 3 || ss[0]["name"] != "p50" || !strings.HasPrefix(ss[1]["name"].(string), "p99 (intervals of 20+") || ss[2]["name"] != "p95" {
		t.Fatalf("series %v, want p50, p99, then p95 drawn over it", []any{ss[0]["name"], ss[1]["name"], ss[2]["name"]})
	}
	if got := values(ss[1]); got[0] != nil || got[3] != 300.0 {
		t.Errorf("p99 %v: want none for an interval of 3 requests, 300 for one of 40", got)
	}
	if ss[1]["itemStyle"].(map[string]any)["color"] == ss[2]["itemStyle"].(map[string]any)["color"] {
		t.Error("p95 and p99 share a colour")
	}
	ma, _ := ss[2]["markArea"].(map[string]any)
	if ma == nil {
		t.Fatal("no mark area for the quiet stretch")
	}
	data := ma["data"].([]any)
	first := data[0].([]any)[0].(map[string]any)
	if len(data) != 1 || first["name"] != "no requests" || first["xAxis"] != 5000.0 || data[0].([]any)[1].(map[string]any)["xAxis"] != 15000.0 {
		t.Errorf("quiet areas %v, want one from 5 s to 15 s", data)
	}
}

// Each time a bench run held the GPU is shaded: a running one from when it
// took it to the end of the axis, an ended one to its end; one before the
// axis is left out, one across its start cut at it; labels do not collide.
func TestWithBench(t *testing.T) {
	tl := points([]int{5, 5, 5}, &snapshot.Quantiles{P50: 1}) // an axis from -50 s to 10 s
	opt := TokenRates(tl, 5000, nil, Light)
	if string(WithBench(opt, nil, Light)) != string(opt) {
		t.Error("no run, but the option changed")
	}
	// Newest first, as the job list has them; the last starts a second
	// after another, closer than a twelfth of the axis: unlabelled.
	runs := []Span{{From: 6000, To: 7000}, {From: 5000}, {From: -70000, To: -40000}, {From: -90000, To: -60000}}
	ss := series(decode(t, WithBench(opt, runs, Light)))
	areas := ss[len(ss)-1]["markArea"].(map[string]any)["data"].([]any)
	var got [][2]float64
	var names []any
	for _, a := range areas {
		pair := a.([]any)
		names = append(names, pair[0].(map[string]any)["name"])
		got = append(got, [2]float64{pair[0].(map[string]any)["xAxis"].(float64), pair[1].(map[string]any)["xAxis"].(float64)})
	}
	if want := [][2]float64{{-50000, -40000}, {5000, 10000}, {6000, 7000}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("bench areas %v, want %v", got, want)
	}
	if want := []any{"bench run", "bench run", ""}; fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("bench area names %q, want %q", names, want)
	}
}

// Marks closer than a twelfth of the axis to the last labelled one keep
// their line and lose their label: 24 loads in a few minutes read as lines,
// not a smear of text.
func TestDenseMarksThinned(t *testing.T) {
	tl := points(make([]int, 120), nil) // 10 minutes
	var marks []snapshot.ModelMark
	for i := range 24 {
		marks = append(marks, snapshot.ModelMark{At: int64(i) * 25_000, Model: "m", Kind: snapshot.MarkLoad})
	}
	ss := series(decode(t, TokenRates(tl, 5000, marks, Light)))
	data := ss[0]["markLine"].(map[string]any)["data"].([]any)
	labelled := 0
	for _, d := range data {
		if show, ok := d.(map[string]any)["label"].(map[string]any)["show"]; !ok || show != false {
			labelled++
		}
	}
	if len(data) != 24 || labelled > 12 || labelled < 6 {
		t.Errorf("%d marks, %d labelled; want every line and at most one label a twelfth of the axis", len(data), labelled)
	}
}

// The throughput chart spans the timeline's window, as the charts beside
// it do, though its samples cover the last minutes only.
func TestThroughputSharesTheTimelineWindow(t *testing.T) {
	tl := points(make([]int, 120), nil)
	series := []snapshot.SeriesPoint{{At: 590_000, TokensPerSecond: 10}, {At: 595_000, TokensPerSecond: 12}}
	x := decode(t, Throughput(series, tl, nil, Light))["xAxis"].([]any)[0].(map[string]any)
	if x["min"] != 0.0 || x["max"] != 595_000.0 {
		t.Errorf("x axis %v..%v, want the timeline's 0..595000", x["min"], x["max"])
	}
}

// Prompt and generation tokens per second per interval; prefill and
// decode time; request lengths by bucket up to the longest.
func TestTokenRatesPhasesLengths(t *testing.T) {
	tl := []snapshot.TimelinePoint{{At: 0, Requests: 2, PromptTokens: 1000, GenerationTokens: 50,
		PrefillMs: &snapshot.Quantiles{P50: 80, P95: 120}, DecodeMs: &snapshot.Quantiles{P50: 900, P95: 1500}}}
	ss := series(decode(t, TokenRates(tl, 5000, nil, Light)))
	if values(ss[0])[0] != 200.0 || values(ss[1])[0] != 10.0 {
		t.Errorf("token rates %v %v, want 200 and 10 tok/s", values(ss[0]), values(ss[1]))
	}
	ss = series(decode(t, Phases(tl, nil, Light)))
	if len(ss) != 4 || values(ss[1])[0] != 120.0 || values(ss[3])[0] != 1500.0 {
		t.Errorf("phases %v", ss)
	}
	l := &snapshot.Lengths{Bounds: snapshot.LengthBounds, Prompt: make([]int, 20), Generation: make([]int, 20)}
	l.Prompt[7], l.Generation[5] = 3, 4 // ≤200 and ≤50 tokens
	m := decode(t, Lengths(l, Light))
	x := m["xAxis"].([]any)[0].(map[string]any)
	cats := x["data"].([]any)
	if len(cats) != 8 || cats[7] != "≤200" || cats[0] != "≤1" {
		t.Errorf("categories %v, want ≤1 to ≤200", cats)
	}
	// The unit under the bounds: at the axis's end it is cut by the edge.
	if x["name"] != "tokens" || x["nameLocation"] != "middle" {
		t.Errorf("x axis named %v at %v, want tokens in the middle", x["name"], x["nameLocation"])
	}
}
