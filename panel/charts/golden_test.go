package charts

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/ from the builders")

// goldenTimeline is ten intervals of 5 s with every figure a chart draws,
// minutes from the fourth on, a quiet stretch and an interval without a
// scheduler sample.
func goldenTimeline() []snapshot.TimelinePoint {
	tl := make([]snapshot.TimelinePoint, 10)
	for i := range tl {
		n := 6 + i
		if i == 3 || i == 4 {
			n = 0 // quiet
		}
		kv, hit := 0.1*float64(i), 0.05*float64(i)
		pt := snapshot.TimelinePoint{At: 100_000 + int64(i)*5000, Requests: n,
			PromptTokens: int64(n) * 120, GenerationTokens: int64(n) * 40,
			KVUsage: &kv, PrefixHitRate: &hit,
			ByFinish: snapshot.FinishCounts{Stop: n - n/3, Length: n / 3, Cancelled: i % 2, Error: i / 9}}
		if n > 0 {
			q := func(base float64) *snapshot.Quantiles {
				return &snapshot.Quantiles{P50: base + float64(i), P95: 2*base + float64(i), P99: 3*base + float64(i)}
			}
			pt.TTFTMs, pt.TPOTMs, pt.TotalMs, pt.QueueMs = q(100), q(20), q(900), q(5)
			pt.PrefillMs, pt.DecodeMs = q(80), q(700)
		}
		if i >= 3 {
			rate := 0.5
			pt.Minute = &snapshot.Minute{Requests: 10 + 5*i, TTFTMs: &snapshot.Quantiles{P50: 100, P95: 250, P99: 400 + float64(i)},
				TPOTMs: &snapshot.Quantiles{P99: 45}, TotalMs: &snapshot.Quantiles{P99: 3000}, QueueMs: &snapshot.Quantiles{P99: 12},
				PrefixHitRate: &rate}
		}
		if i != 6 {
			pt.Scheduler = &snapshot.IntervalScheduler{Samples: 5, TokensPerSecond: 100.04 + float64(i), Active: 3 + i%4, Capacity: 16, Queued: i % 3}
		}
		tl[i] = pt
	}
	return tl
}

// goldenOptions is an option of every builder, from inputs that reach
// each of its branches: marks at the axis's ends and inside it, bench runs,
// a comparison of load curves with SLO and max rate marks.
func goldenOptions() map[string]*Option {
	tl := goldenTimeline()
	marks := []snapshot.ModelMark{
		{At: 100_500, Model: "org/a", Kind: snapshot.MarkLoad},
		{At: 120_000, Model: "org/b", Kind: snapshot.MarkSwap},
		{At: 121_000, Model: "org/a", Kind: snapshot.MarkUnload}, // too close to the swap: unlabelled
		{At: 146_000, Model: "org/c", Kind: snapshot.MarkLoad},   // after the newest point
	}
	samples := []snapshot.SeriesPoint{{At: 1000, TokensPerSecond: 120.5, Active: 3, Capacity: 8}, {At: 2000, TokensPerSecond: 240, Active: 6, Capacity: 8, Queued: 2}}
	models := []snapshot.Model{
		{Model: "org/a", WeightsBytes: 2 << 30, KVBytes: 512 << 20, PrefixCacheBytes: 64 << 20},
		{Model: "org/b", WeightsBytes: 1 << 30},
	}
	lengths := &snapshot.Lengths{Bounds: snapshot.LengthBounds, Prompt: make([]int, 20), Generation: make([]int, 20)}
	lengths.Prompt[7], lengths.Generation[5], lengths.Prompt[2] = 3, 4, 1
	entries := []bench.HistoryEntry{
		{ID: "r3", Profile: "smoke", Complete: true, StartedAt: 3_000_000, Cells: []bench.CompactCell{{Key: "m/tree/a", DecodeTokensPerSecond: f(30)}}},
		{ID: "r1", Profile: "smoke", Complete: true, StartedAt: 1_000_000, Cells: []bench.CompactCell{
			{Key: "m/tree/a", DecodeTokensPerSecond: f(40)}, {Key: "m/reference/b", DecodeTokensPerSecond: f(35)},
		}},
	}
	other := sweep()
	other.LoadPoints = []bench.LoadPoint{loadPoint(1, 1, 1, 100, 80, 160, 18, 24), loadPoint(2, 1, 2, 200, 90, 170, 19, 25)}
	other.MaxRate, other.SLO = &bench.MaxRate{Rate: 2}, &bench.SLO{TTFTMs: 800}
	beyond := bench.CompactCell{LoadPoints: []bench.LoadPoint{loadPoint(1, 1, 1, 100, 100, 200, 20, 26)},
		MaxRate: &bench.MaxRate{Rate: 1.5}, SLO: &bench.SLO{TTFTMs: 5000}}
	runs := []Span{{From: 130_000}, {From: 90_000, To: 110_000}}
	return map[string]*Option{
		"throughput-samples":   Throughput(samples, nil, nil, Dark),
		"throughput-timeline":  Throughput(samples, tl, marks, Light),
		"memory":               Memory(models, Light),
		"gauge":                Gauge("org/a KV", 42.25, Dark),
		"trend":                Trend(entries, "smoke", bench.Figures[0], false, Light),
		"lengths":              Lengths(lengths, Light),
		"latency":              Latency(tl, marks, TTFT, "ms", Light),
		"latency-bench":        WithBench(Latency(tl, nil, E2E, "ms", Dark), runs, Dark),
		"phases":               Phases(tl, marks, Light),
		"token-rates":          TokenRates(tl, 5000, marks, Light),
		"finish-rate":          FinishRate(tl, 5000, marks, Light),
		"cache-use":            CacheUse(tl, marks, Light),
		"cache-use-bench":      WithBench(CacheUse(tl, nil, Light), runs, Light),
		"load-curve-compare":   LoadCurve([]CurveRun{{Label: "A", Cell: sweep()}, {Label: "B", Cell: other}}, LoadTTFT, ByOutputTokens, Light),
		"load-curve-stretched": LoadCurve([]CurveRun{{Cell: beyond}}, LoadTTFT, ByRequestRate, Dark),
	}
}

// TestOptionsGolden holds every builder's option to the one in
// testdata/golden/, compared as decoded JSON (key order and number
// spelling aside); -update writes them anew, indented with sorted keys, so
// a change to what a chart draws shows in the golden files' diff.
func TestOptionsGolden(t *testing.T) {
	for name, option := range goldenOptions() {
		t.Run(name, func(t *testing.T) {
			var got any
			if err := json.Unmarshal(option.JSON(), &got); err != nil {
				t.Fatalf("option is not JSON: %v", err)
			}
			path := filepath.Join("testdata", "golden", name+".json")
			if *update {
				b, err := json.MarshalIndent(got, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -run TestOptionsGolden -update writes it)", err)
			}
			var want any
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if g, w := canonical(t, got), canonical(t, want); !bytes.Equal(g, w) {
				t.Errorf("option differs from %s:\n got %s\nwant %s", path, g, w)
			}
		})
	}
}

// canonical is v as JSON with sorted keys.
func canonical(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
