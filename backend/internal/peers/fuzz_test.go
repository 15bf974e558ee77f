package peers

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// FuzzDecode: whatever the file, Decode does not panic; it answers an
// error of bounded length, or a run whose every point's figures are finite,
// at least 0 and within the history's bounds, that the history keeps
// (Compact and Check) and that encodes as JSON.
func FuzzDecode(f *testing.F) {
	for _, path := range []string{"testdata/vllm-0.33.0/results.jsonl", "testdata/aiperf-0.13.0/rate8.json"} {
		f.Add(readFixture(f, path))
	}
	f.Add([]byte(vllmLine("", "")))
	f.Add([]byte("[" + vllmLine("", "") + "," + vllmLine("mean_ttft_ms", "NaN") + "]"))
	f.Add([]byte(`{"metadata": {"guidellm_version": "0.8.1"}, "benchmarks": [{"config": {"strategy": {"type_": "concurrent", "streams": 4}}, "start_time": 1796663671.1, "end_time": 1796663681.1, "duration": 10, "metrics": {"request_totals": {"successful": 3, "errored": 0, "incomplete": 0, "total": 3}, "time_to_first_token_ms": {"successful": {"mean": 10, "median": 9, "std_dev": 1, "count": 3, "percentiles": {"p90": 11, "p95": 12, "p99": 13, "p999": 14}}}}}]}`))
	f.Add([]byte(`{"aiperf_version": "0.1", "time_to_first_token": {"unit": "ns", "avg": 5e6}, "request_throughput": {"unit": "requests/sec", "avg": 1}, "start_time": "2026-01-01T00:00:00", "end_time": "2026-01-01T00:00:10"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := Decode(b, Options{Modified: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
		if err != nil {
			if len(err.Error()) > 1000 {
				t.Fatalf("an error of %d bytes", len(err.Error()))
			}
			return
		}
		for _, c := range rec.Cells {
			for _, p := range c.LoadPoints {
				checkPoint(t, p)
			}
		}
		if err := bench.Compact(rec, "").Check(time.Date(2100, 1, 2, 0, 0, 0, 0, time.UTC)); err != nil {
			t.Fatalf("history refuses the run: %v", err)
		}
		if _, err := json.Marshal(rec); err != nil {
			t.Fatalf("the run does not encode: %v", err)
		}
	})
}

func checkPoint(t *testing.T, p bench.LoadPoint) {
	t.Helper()
	figures := []float64{p.OfferedRate, p.DurationS, p.SendRate, p.RequestThroughput, p.OutputThroughput,
		p.TotalTokenThroughput, float64(p.InputTokens), float64(p.OutputTokens)}
	for _, d := range []bench.Dist{p.TTFT, p.TPOT, p.ITL, p.E2EL, p.Lag} {
		figures = append(figures, d.Mean, d.Std, d.Median, d.P90, d.P95, d.P99, d.P999, float64(d.Count))
	}
	if p.Goodput != nil {
		figures = append(figures, *p.Goodput)
	}
	for _, v := range figures {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || (v > bench.MaxFigure && v > maxTokens) {
			t.Fatalf("a figure %v out of bounds in %+v", v, p)
		}
	}
	if p.Requests < 0 || p.Completed < 0 || p.Errors < 0 || p.Concurrency < 0 || p.Concurrency > bench.MaxLoadConcurrency ||
		p.OfferedRate > bench.MaxLoadRate {
		t.Fatalf("counts out of bounds in %+v", p)
	}
}
