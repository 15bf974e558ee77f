package load

import (
	"math"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// ok is a completed request of 5 output tokens sent on schedule.
func ok(i int, sched, ttft, e2el float64) bench.RequestRecord {
	return bench.RequestRecord{Index: i, ScheduledMs: sched, SentMs: sched, TTFTMs: ttft, E2ELMs: e2el,
		TPOTMs: (e2el - ttft) / 4, ITLMs: []float64{1, 2, 3, 4}, PromptTokens: 10, OutputTokens: 5, MaxTokens: 5}
}

func TestSummary(t *testing.T) {
	slo := &bench.SLO{TTFTMs: 50}
	for _, tc := range []struct {
		name    string
		p       point
		load    bench.Load
		records []bench.RequestRecord
		check   func(t *testing.T, lp bench.LoadPoint)
		// problems are texts each of which a problem holds.
		problems []string
	}{
		{"figures", point{rate: 1}, bench.Load{WarmupRequests: 1, Goodput: slo}, []bench.RequestRecord{
			{Index: 0, Warmup: true, ScheduledMs: 0, SentMs: 0, TTFTMs: 999, E2ELMs: 999, OutputTokens: 5, MaxTokens: 5},
			ok(1, 1000, 10, 100), ok(2, 2000, 20, 100), ok(3, 3000, 30, 100), ok(4, 4000, 60, 150),
		}, func(t *testing.T, lp bench.LoadPoint) {
			if lp.Requests != 4 || lp.Completed != 4 || lp.Warmup != 1 || lp.OutputTokens != 20 || lp.InputTokens != 40 {
				t.Errorf("counts %+v", lp)
			}
			// From the first counted schedule (1 s) to the last end (4.15 s).
			if math.Abs(lp.DurationS-3.15) > 1e-9 || math.Abs(lp.RequestThroughput-4/3.15) > 1e-9 {
				t.Errorf("duration %v throughput %v", lp.DurationS, lp.RequestThroughput)
			}
			if lp.TTFT.Median != 25 || math.Abs(lp.TTFT.P99-(30+0.97*30)) > 1e-9 || lp.TTFT.Mean != 30 {
				t.Errorf("TTFT %+v", lp.TTFT)
			}
			if lp.ITL.Count != 16 || lp.ITL.Median != 2.5 {
				t.Errorf("ITL %+v", lp.ITL)
			}
			if lp.Goodput == nil || lp.GoodRequests != 3 || math.Abs(*lp.Goodput-3/3.15) > 1e-9 {
				t.Errorf("goodput %v over %d", lp.Goodput, lp.GoodRequests)
			}
			if math.Abs(lp.SendRate-1) > 1e-9 || lp.Saturated {
				t.Errorf("send rate %v saturated %v", lp.SendRate, lp.Saturated)
			}
		}, nil},
		{"errors, no usage, short", point{rate: 1}, bench.Load{}, []bench.RequestRecord{
			ok(0, 0, 10, 100),
			{Index: 1, ScheduledMs: 1000, SentMs: 1000, Error: "HTTP 503: busy", MaxTokens: 5},
			{Index: 2, ScheduledMs: 2000, SentMs: 2000, Error: "HTTP 503: busy", MaxTokens: 5},
			{Index: 3, ScheduledMs: 3000, SentMs: 3000, TTFTMs: 5, E2ELMs: 50, MaxTokens: 5},
			{Index: 4, ScheduledMs: 4000, SentMs: 4000, TTFTMs: 5, E2ELMs: 50, OutputTokens: 2, MaxTokens: 5},
		}, func(t *testing.T, lp bench.LoadPoint) {
			if lp.Errors != 2 || lp.Completed != 3 || lp.TPOT.Count != 2 {
				t.Errorf("%+v", lp)
			}
		}, []string{"2 of 5 requests failed; 2× HTTP 503: busy", "1 of 3 completed requests had no usage", "1 of 3 completed requests generated fewer tokens"}},
		{"late client", point{rate: 100}, bench.Load{}, []bench.RequestRecord{
			{Index: 0, ScheduledMs: 0, SentMs: 5, TTFTMs: 1, E2ELMs: 2, OutputTokens: 5, MaxTokens: 5},
			{Index: 1, ScheduledMs: 10, SentMs: 10.1, TTFTMs: 1, E2ELMs: 2, OutputTokens: 5, MaxTokens: 5},
		}, nil, []string{"the client fell behind its schedule: lag p99 4.95 ms"}},
		{"a capped arrival's wait is not lag", point{rate: 100, streams: 1}, bench.Load{}, []bench.RequestRecord{
			{Index: 0, ScheduledMs: 0, SlotMs: 50, SentMs: 50.2, TTFTMs: 1, E2ELMs: 2, OutputTokens: 5, MaxTokens: 5},
		}, func(t *testing.T, lp bench.LoadPoint) {
			if math.Abs(lp.Lag.P99-0.2) > 1e-9 {
				t.Errorf("lag %v, want 0.2 ms", lp.Lag.P99)
			}
		}, nil},
		{"latency growing", point{streams: 2}, bench.Load{}, func() []bench.RequestRecord {
			var rs []bench.RequestRecord
			for i := range 16 {
				rs = append(rs, ok(i, float64(i*100), 10, float64(100+i*30)))
			}
			return rs
		}(), func(t *testing.T, lp bench.LoadPoint) {
			if !lp.Saturated || lp.Arrival != "" || lp.OfferedRate != 0 {
				t.Errorf("%+v", lp)
			}
		}, []string{"saturated"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSummary(tc.p, tc.load)
			for _, r := range tc.records {
				s.add(r)
			}
			lp := s.point()
			if tc.check != nil {
				tc.check(t, lp)
			}
			for _, want := range tc.problems {
				found := false
				for _, p := range lp.Problems {
					found = found || strings.Contains(p, want)
				}
				if !found {
					t.Errorf("no problem with %q in %q", want, lp.Problems)
				}
			}
			if tc.problems == nil && len(lp.Problems) > 0 {
				t.Errorf("problems %q", lp.Problems)
			}
		})
	}
}
