package runner

import (
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

func decodeRuns(attempt int, rates ...float64) []bench.Sample {
	var out []bench.Sample
	for i, r := range rates {
		out = append(out, bench.Sample{Phase: bench.PhaseDecode, Run: i + 1, Attempt: attempt, DecodeTokensPerSecond: r})
	}
	return out
}

func TestCheckSpread(t *testing.T) {
	tests := []struct {
		name         string
		samples      []bench.Sample
		limit        float64
		wantUnstable bool
		strict       bool // with --strict the unstable cell fails
	}{
		{"within 1.15", decodeRuns(1, 100, 105, 114), 1.15, false, false},
		{"exactly 1.15 is stable", decodeRuns(1, 100, 115), 1.15, false, false},
		{"over 1.15", decodeRuns(1, 100, 105, 116), 1.15, true, false},
		{"the plan's limit", decodeRuns(1, 100, 116), 1.2, false, false},
		{"failed runs left out", append(decodeRuns(1, 100, 110), bench.Sample{Phase: bench.PhaseDecode, Run: 3, Attempt: 1, DecodeTokensPerSecond: 10, Error: "timed out"}), 1.15, false, false},
		{"other phases left out", append(decodeRuns(1, 100, 110), bench.Sample{Phase: bench.PhaseLongContext, Attempt: 1, DecodeTokensPerSecond: 20}), 1.15, false, false},
		{"a failed first attempt is not mixed with the retry", append(decodeRuns(1, 40, 41), decodeRuns(2, 100, 110)...), 1.15, false, false},
		{"the retry alone is unstable", append(decodeRuns(1, 100, 101), decodeRuns(2, 100, 130)...), 1.15, true, false},
		{"no decode runs", nil, 1.15, false, false},
		{"strict: unstable fails", decodeRuns(1, 100, 116), 1.15, true, true},
		{"strict: stable stays measured", decodeRuns(1, 100, 110), 1.15, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &bench.CellResult{Status: bench.CellMeasured, Samples: tt.samples}
			checkSpread(res, tt.limit, tt.strict)
			wantStatus := bench.CellMeasured
			if tt.strict && tt.wantUnstable {
				wantStatus = bench.CellFailed
			}
			if res.Status != wantStatus || (res.Status == bench.CellFailed && !strings.Contains(res.Note, "--strict")) {
				t.Errorf("status %q note %q, want %q", res.Status, res.Note, wantStatus)
			}
			if res.Unstable != tt.wantUnstable {
				t.Fatalf("unstable = %v, want %v (note %q)", res.Unstable, tt.wantUnstable, res.Note)
			}
			if tt.wantUnstable && (!strings.Contains(res.Note, "unstable") || len(res.Problems) != 1) {
				t.Errorf("note %q problems %q: want the spread in both", res.Note, res.Problems)
			}
			if !tt.wantUnstable && (res.Note != "" || len(res.Problems) != 0) {
				t.Errorf("a stable cell got note %q problems %q", res.Note, res.Problems)
			}
		})
	}
}
