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

// The legend reads p50, p95, p99. The p99 is the minute's to each point,
// drawn where the minute holds enough requests to have one apart from the
// slowest, through a quiet interval too; a timeline without minutes (an
// older backend's) draws an interval's p99 where the interval holds
// enough. Quiet stretches are shaded, unlabelled.
func TestLatencyTails(t *testing.T) {
	q := &snapshot.Quantiles{P50: 100, P95: 300, P99: 300}
	minute := func(n int, p99 float64) *snapshot.Minute {
		return &snapshot.Minute{Requests: n, TTFTMs: &snapshot.Quantiles{P50: 100, P95: 290, P99: p99}}
	}
	withMinutes := points([]int{3, 0, 0, 5, 5}, q)
	for i, m := range []*snapshot.Minute{minute(3, 300), minute(3, 300), minute(3, 300), minute(8, 300), minute(20, 450)} {
		withMinutes[i].Minute = m
	}
	quietMinute := points([]int{5, 0}, q)
	quietMinute[0].Minute, quietMinute[1].Minute = minute(25, 500), minute(25, 500)
	tests := []struct {
		name    string
		tl      []snapshot.TimelinePoint
		p99Name string
		p99     []any
		quiet   [][2]float64
	}{
		{"minutes: a p99 where the minute holds 20", withMinutes, "p99 (1 min)", []any{nil, nil, nil, nil, 450.0}, [][2]float64{{5000, 15000}}},
		{"minutes: through a quiet interval", quietMinute, "p99 (1 min)", []any{500.0, 500.0}, nil},
		{"no minutes: an interval's p99 where it holds 20", points([]int{3, 0, 0, 40, 40}, q), "p99", []any{nil, nil, nil, 300.0, 300.0}, [][2]float64{{5000, 15000}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ss := series(decode(t, Latency(tc.tl, nil, TTFT, "ms", Dark)))
			var names []any
			for _, s := range ss {
				names = append(names, s["name"])
			}
			if want := []any{"p50", "p95", tc.p99Name}; fmt.Sprint(names) != fmt.Sprint(want) {
				t.Fatalf("series %q, want %q", names, want)
			}
			if got := values(ss[2]); fmt.Sprint(got) != fmt.Sprint(tc.p99) {
				t.Errorf("p99 %v, want %v", got, tc.p99)
			}
			if ss[1]["itemStyle"].(map[string]any)["color"] == ss[2]["itemStyle"].(map[string]any)["color"] {
				t.Error("p95 and p99 share a colour")
			}
			var quiet [][2]float64
			if ma, _ := ss[2]["markArea"].(map[string]any); ma != nil {
				for _, a := range ma["data"].([]any) {
					from, to := a.([]any)[0].(map[string]any), a.([]any)[1].(map[string]any)
					if from["name"] != nil || from["label"].(map[string]any)["show"] != false {
						t.Errorf("a quiet area labelled: %v", from)
					}
					quiet = append(quiet, [2]float64{from["xAxis"].(float64), to["xAxis"].(float64)})
				}
			}
			if fmt.Sprint(quiet) != fmt.Sprint(tc.quiet) {
				t.Errorf("quiet areas %v, want %v", quiet, tc.quiet)
			}
		})
	}
}

// Ten minutes of intervals at one request a second, a few of them quiet:
// no chart labels a quiet stretch, however many there are.
func TestQuietStretchesUnlabelled(t *testing.T) {
	requests := make([]int, 120)
	for i := range requests {
		requests[i] = 5
		if i%9 == 4 {
			requests[i] = 0
		}
	}
	tl := points(requests, &snapshot.Quantiles{P50: 1, P95: 2, P99: 3})
	if n := len(Quiet(tl)); n != 13 {
		t.Fatalf("%d quiet stretches, want 13", n)
	}
	for name, o := range map[string]*Option{"latency": Latency(tl, nil, TTFT, "ms", Light), "phases": Phases(tl, nil, Light)} {
		option := o.JSON()
		if strings.Contains(string(option), "no requests") || strings.Count(string(option), `"show":false`) < 13 {
			t.Errorf("%s: quiet stretches labelled", name)
		}
	}
}

// Each time a bench run held the GPU is shaded: a running one from when it
// took it to the end of the axis, an ended one to its end; one before the
// axis is left out, one across its start cut at it; labels do not collide.
func TestWithBench(t *testing.T) {
	tl := points([]int{5, 5, 5}, &snapshot.Quantiles{P50: 1}) // an axis from -50 s to 10 s
	opt := TokenRates(tl, 5000, nil, Light).JSON()
	if string(WithBench(TokenRates(tl, 5000, nil, Light), nil, Light).JSON()) != string(opt) {
		t.Error("no run, but the option changed")
	}
	// Newest first, as the job list has them; the last starts a second
	// after another, closer than a twelfth of the axis: unlabelled.
	runs := []Span{{From: 6000, To: 7000}, {From: 5000}, {From: -70000, To: -40000}, {From: -90000, To: -60000}}
	ss := series(decode(t, WithBench(TokenRates(tl, 5000, nil, Light), runs, Light)))
	areas := ss[len(ss)-1]["markArea"].(map[string]any)["data"].([]any)
	var got [][2]float64
	var names []any
	for _, a := range areas {
		pair := a.([]any)
		name, _ := pair[0].(map[string]any)["name"].(string) // unnamed: no name
		names = append(names, name)
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
// it do: from the intervals' scheduler where the timeline carries it (a
// gap where an interval had no sample), else from the series' samples,
// which cover the last minutes only.
func TestThroughputSharesTheTimelineWindow(t *testing.T) {
	tl := points(make([]int, 120), nil)
	samples := []snapshot.SeriesPoint{{At: 590_000, TokensPerSecond: 10}, {At: 595_000, TokensPerSecond: 12}}
	x := decode(t, Throughput(samples, tl, nil, Light))["xAxis"].([]any)[0].(map[string]any)
	if x["min"] != 0.0 || x["max"] != 595_000.0 {
		t.Errorf("x axis %v..%v, want the timeline's 0..595000", x["min"], x["max"])
	}
	for i := range tl {
		if i != 7 {
			tl[i].Scheduler = &snapshot.IntervalScheduler{Samples: 5, TokensPerSecond: 100.04 + float64(i), Active: 3, Capacity: 16, Queued: i % 2}
		}
	}
	m := decode(t, Throughput(samples, tl, nil, Light))
	ss := series(m)
	tps, queued := values(ss[0]), values(ss[3])
	if len(tps) != 120 || tps[0] != 100.0 || tps[7] != nil || tps[119] != 219.0 || queued[1] != 1.0 || queued[7] != nil {
		t.Errorf("tokens/s %v…, queued %v…: want a point per interval from the first, a gap at the eighth", tps[:9], queued[:9])
	}
	if x := m["xAxis"].([]any)[0].(map[string]any); x["min"] != 0.0 || x["max"] != 595_000.0 {
		t.Errorf("x axis %v..%v, want 0..595000", x["min"], x["max"])
	}
}

// The prefix hit rate is the minute's to each point where the timeline
// carries minutes, else the interval's.
func TestCachePrefixOverTheMinute(t *testing.T) {
	half, most := 0.5, 0.9
	tl := []snapshot.TimelinePoint{{At: 0, PrefixHitRate: &most, Minute: &snapshot.Minute{PrefixHitRate: &half}}, {At: 5000, PrefixHitRate: &half}}
	ss := series(decode(t, CacheUse(tl, nil, Light)))
	if ss[1]["name"] != "prefix hit rate (1 min)" || fmt.Sprint(values(ss[1])) != "[50 <nil>]" {
		t.Errorf("%v %v, want the minute's rate, none where no minute", ss[1]["name"], values(ss[1]))
	}
	tl[0].Minute = nil
	ss = series(decode(t, CacheUse(tl, nil, Light)))
	if ss[1]["name"] != "prefix hit rate" || fmt.Sprint(values(ss[1])) != "[90 50]" {
		t.Errorf("%v %v, want each interval's rate", ss[1]["name"], values(ss[1]))
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

// A mark less than an interval before the timeline's first point (the
// load that started the traffic, in the interval before its first
// event's) stretches the axis back to it; one further back is left out.
func TestMarkJustBeforeTheTimeline(t *testing.T) {
	tl := points([]int{5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5}, &snapshot.Quantiles{P50: 1}) // 0 to 65 s
	for _, tc := range []struct {
		name  string
		at    int64
		marks int
		min   float64
	}{
		{"in the interval before", -3000, 1, -3000},
		{"two intervals before", -6000, 0, 0},
		{"at the first point", 0, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := decode(t, Latency(tl, []snapshot.ModelMark{{At: tc.at, Model: "m", Kind: snapshot.MarkLoad}}, TTFT, "ms", Light))
			var n int
			if ml, ok := series(m)[0]["markLine"].(map[string]any); ok {
				n = len(ml["data"].([]any))
			}
			if min := m["xAxis"].([]any)[0].(map[string]any)["min"]; n != tc.marks || min != tc.min {
				t.Errorf("%d marks, axis from %v; want %d from %v", n, min, tc.marks, tc.min)
			}
		})
	}
}
