package runner

import (
	"context"
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

// Decode runs that spread past the bound are measured once more, and the
// second attempt's runs are the ones that count; stable runs, or another
// phase, are not measured again.
func TestUnstableDecodeMeasuredAgain(t *testing.T) {
	tests := []struct {
		name     string
		phase    string
		attempts [][]float64 // each attempt's decode rates
		want     int         // attempts made
		unstable bool
	}{
		{"stable at once", bench.PhaseDecode, [][]float64{{100, 110}, {100, 100}}, 1, false},
		{"unstable, then stable", bench.PhaseDecode, [][]float64{{100, 128}, {100, 105}}, 2, false},
		{"unstable twice", bench.PhaseDecode, [][]float64{{100, 128}, {100, 130}}, 2, true},
		{"another phase is not measured again", bench.PhaseLongContext, [][]float64{{100, 128}, {100, 100}}, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			res := &bench.CellResult{Status: bench.CellMeasured}
			m := &measurer{run: &run{o: Options{Out: &out}, phases: bench.Phases{UnstableSpread: 1.15}}, res: res}
			made := 0
			ok := m.phase(context.Background(), phase{tt.phase, func(_ context.Context, attempt int) ([]bench.Sample, error) {
				made++
				var s []bench.Sample
				for i, r := range tt.attempts[attempt-1] {
					s = append(s, bench.Sample{Phase: tt.phase, Run: i + 1, Attempt: attempt, DecodeTokensPerSecond: r})
				}
				return s, nil
			}})
			if !ok || made != tt.want {
				t.Fatalf("ok %v after %d attempts, want %d:\n%s", ok, made, tt.want, out.String())
			}
			checkSpread(res, 1.15, false)
			if res.Unstable != tt.unstable {
				t.Errorf("unstable %v, want %v (%q)", res.Unstable, tt.unstable, res.Note)
			}
		})
	}
}
