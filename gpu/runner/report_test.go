package runner

import (
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// report.md's table has a column per bench.Figures entry (the figures
// every view of a run shows), and says "n/a" for what an attached run
// cannot measure, "–" for what was not measured.
func TestReportTable(t *testing.T) {
	gib := int64(3 << 30)
	cold := 412.0
	decode := func(rates ...float64) []bench.Sample { return decodeRuns(1, rates...) }
	tests := []struct {
		name string
		cell bench.CellResult
		row  string
	}{
		{"measured", bench.CellResult{Key: "m/tree/a", Status: bench.CellMeasured, ColdStartMs: &cold, PeakRSSBytes: 512 << 20, PeakGPUMemoryBytes: &gib,
			Samples: append(decode(2003.1, 2010, 1990), bench.Sample{Phase: bench.PhaseWarmTTFT, Run: 1, Attempt: 1, TTFTMs: 10.74})},
			"| m/tree/a | measured | 2003 | – | 10.7 | – | – | – | 412.0 | 512.0 | 3072 |"},
		{"attached", bench.CellResult{Key: "m/tree/b", Status: bench.CellMeasured, Attached: true, Samples: decode(50)},
			"| m/tree/b | measured | 50.0 | – | – | – | – | – | n/a (attached) | n/a | n/a |"},
		{"unstable", bench.CellResult{Key: "m/tree/c", Status: bench.CellMeasured, Unstable: true, Samples: decode(50, 80)},
			"| m/tree/c | measured (unstable) | 65.0 |"},
		{"failed", bench.CellResult{Key: "m/tree/d", Status: bench.CellFailed, Note: "start: boom"},
			"| m/tree/d | failed | – | – | – | – | – | – | – | – | n/a |"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Report(bench.RunRecord{ID: "r", Plan: bench.Plan{Scope: bench.ScopeAll}, Cells: []bench.CellResult{tt.cell}})
			header := "| cell | status"
			for _, f := range bench.Figures {
				header += " | " + f.Name + " " + f.Unit
			}
			if header += " | peak GPU MiB |"; !strings.Contains(r, header+"\n") {
				t.Errorf("report.md lacks the header %q:\n%s", header, r)
			}
			if !strings.Contains(r, tt.row) {
				t.Errorf("report.md lacks the row %q:\n%s", tt.row, r)
			}
		})
	}
}

// report.md says how long the run took as the CLI and the panel do
// (shared/duration).
func TestReportDuration(t *testing.T) {
	const start = 1_764_690_000_000
	r := Report(bench.RunRecord{ID: "r", Plan: bench.Plan{Scope: bench.ScopeAll}, StartedAt: start, FinishedAt: start + 125_400, Complete: true})
	if !strings.Contains(r, ", took 2 min 05 s; complete (exit 0)") {
		t.Errorf("report.md lacks the run's duration:\n%s", r)
	}
}

// report.md says how the samples were timed, so runs timed differently
// are not compared unawares; failed samples do not count.
func TestReportTiming(t *testing.T) {
	ok := func(stamped bool) bench.Sample { return bench.Sample{Phase: bench.PhaseDecode, Stamped: stamped} }
	failed := bench.Sample{Phase: bench.PhaseDecode, Error: "boom"}
	tests := []struct {
		name    string
		samples []bench.Sample
		want    string // "" for no timing line
	}{
		{"stamped", []bench.Sample{ok(true), ok(true), failed}, "- timing: every sample by the kernel's arrival stamps of its chunks\n"},
		{"read", []bench.Sample{ok(false)}, "- timing: every sample by when the runner read its chunks (no arrival stamps here)\n"},
		{"mixed", []bench.Sample{ok(false), ok(true), ok(true)}, "- timing: 2 of 3 samples by the kernel's arrival stamps of their chunks, the others by when the runner read them\n"},
		{"nothing measured", []bench.Sample{failed}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Report(bench.RunRecord{ID: "r", Plan: bench.Plan{Scope: bench.ScopeAll},
				Cells: []bench.CellResult{{Key: "m/tree/a", Status: bench.CellMeasured, Samples: tt.samples}}})
			if got := strings.Contains(r, "- timing:"); got != (tt.want != "") || !strings.Contains(r, tt.want+"\nMedians.") {
				t.Errorf("report.md does not have %q before the table:\n%s", tt.want, r)
			}
		})
	}
}
