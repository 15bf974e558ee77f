package bench

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func f(v float64) *float64 { return &v }

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want *float64
	}{
		{"empty", nil, nil},
		{"one", []float64{7}, f(7)},
		{"odd, unsorted", []float64{9, 1, 5}, f(5)},
		{"even takes the mean of the middle two", []float64{4, 1, 3, 2}, f(2.5)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Median(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Median(%v) = %v, want %v", tt.in, deref(got), deref(tt.want))
			}
		})
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestCompactCellOf(t *testing.T) {
	tests := []struct {
		name string
		cell CellResult
		want CompactCell
	}{
		{
			name: "medians per phase, errors and zero figures left out",
			cell: CellResult{
				Key: "m/tree/default", Model: "m", Kind: KindTree, Configuration: "default", Status: CellMeasured,
				ColdStartMs: f(1500), PeakRSSBytes: 512 << 20,
				Samples: []Sample{
					{Phase: PhaseDecode, DecodeTokensPerSecond: 50},
					{Phase: PhaseDecode, DecodeTokensPerSecond: 40},
					{Phase: PhaseDecode, DecodeTokensPerSecond: 60},
					{Phase: PhaseDecode, DecodeTokensPerSecond: 1000, Error: "timeout"},
					{Phase: PhaseColdTTFT, TTFTMs: 300, PrefillTokensPerSecond: 3400},
					{Phase: PhaseColdTTFT, TTFTMs: 200, PrefillTokensPerSecond: 5000},
					{Phase: PhaseWarmTTFT, TTFTMs: 40},
					{Phase: PhaseWarmTTFT, TTFTMs: 30},
					{Phase: PhaseWarmTTFT, TTFTMs: 35},
					{Phase: PhaseLongContext, PrefillTokensPerSecond: 0}, // not measured
					{Phase: PhaseConcurrent, AggregateTokensPerSecond: 180},
				},
			},
			want: CompactCell{
				Key: "m/tree/default", Model: "m", Kind: KindTree, Configuration: "default", Status: CellMeasured,
				DecodeTokensPerSecond:    f(50),
				TTFTColdMs:               f(250),
				TTFTWarmMs:               f(35),
				Prefill1kTokensPerSecond: f(4200),
				AggregateTokensPerSecond: f(180),
				ColdStartMs:              f(1500),
				PeakRssMB:                f(512),
				Spread: map[string]Range{"decode": {40, 60}, "ttft_cold": {200, 300}, "ttft_warm": {30, 40},
					"prefill_1k": {3400, 5000}, "aggregate": {180, 180}},
			},
		},
		{
			name: "a retried phase counts its last attempt only",
			cell: CellResult{
				Key: "k", Status: CellMeasured,
				Samples: []Sample{
					{Phase: PhaseDecode, Run: 1, Attempt: 1, DecodeTokensPerSecond: 10},
					{Phase: PhaseDecode, Run: 2, Attempt: 1, DecodeTokensPerSecond: 10},
					{Phase: PhaseDecode, Run: 3, Attempt: 1, Error: "timed out"},
					{Phase: PhaseDecode, Run: 1, Attempt: 2, DecodeTokensPerSecond: 50},
					{Phase: PhaseDecode, Run: 2, Attempt: 2, DecodeTokensPerSecond: 60},
					{Phase: PhaseDecode, Run: 3, Attempt: 2, DecodeTokensPerSecond: 40},
					// The phases are retried on their own: cold TTFT's one
					// attempt counts.
					{Phase: PhaseColdTTFT, Run: 1, Attempt: 1, TTFTMs: 200},
				},
			},
			want: CompactCell{Key: "k", Status: CellMeasured, DecodeTokensPerSecond: f(50), TTFTColdMs: f(200),
				Spread: map[string]Range{"decode": {40, 60}, "ttft_cold": {200, 200}}},
		},
		{
			name: "an attached cell has no cold start, and says so",
			cell: CellResult{Key: "k", Status: CellMeasured, Attached: true,
				Samples: []Sample{{Phase: PhaseDecode, DecodeTokensPerSecond: 50}}},
			want: CompactCell{Key: "k", Status: CellMeasured, Attached: true, DecodeTokensPerSecond: f(50),
				Spread: map[string]Range{"decode": {50, 50}}},
		},
		{
			name: "a failed cell keeps its note and has no figures",
			cell: CellResult{Key: "k", Status: CellFailed, Note: "server never became ready"},
			want: CompactCell{Key: "k", Status: CellFailed, Note: "server never became ready"},
		},
		{
			// As the original: a comparison never counts a failed cell's
			// figures; its samples stay in the run's record.
			name: "a cell that failed after measuring a phase has no figures",
			cell: CellResult{Key: "k", Status: CellFailed, Note: "cold-ttft: server exited", ColdStartMs: f(900), PeakRSSBytes: 1 << 30,
				Samples: []Sample{{Phase: PhaseDecode, DecodeTokensPerSecond: 50}}},
			want: CompactCell{Key: "k", Status: CellFailed, Note: "cold-ttft: server exited"},
		},
		{
			name: "a skipped cell keeps its reason and has no figures",
			cell: CellResult{Key: "k", Status: CellSkipped, Note: "model not downloaded", ColdStartMs: f(900)},
			want: CompactCell{Key: "k", Status: CellSkipped, Note: "model not downloaded"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CompactCellOf(tt.cell); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("CompactCellOf =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestCompactRun(t *testing.T) {
	r := RunRecord{
		ID: "20261202T155633Z-ab", Profile: "smoke", Plan: Plan{Scope: ScopeScoped},
		StartedAt: 1000, FinishedAt: 4500, ExitCode: 1, Problems: []string{"cell k: decode failed"},
		Cells: []CellResult{{Key: "k", Status: CellFailed}},
	}
	e := Compact(r, "/home/x/metrics/bench/runs/20261202T155633Z-ab")
	if e.DurationMs != 3500 || e.Scope != ScopeScoped || e.Complete || e.ExitCode != 1 ||
		len(e.Cells) != 1 || len(e.Problems) != 1 || e.RunDirectory == "" {
		t.Fatalf("Compact = %+v", e)
	}
	r.Problems[0] = "changed"
	if e.Problems[0] == "changed" {
		t.Fatal("Compact shares the record's problems slice")
	}
}

// A cell with load points carries the plan's SLO, so the panel can draw
// it; a cell without (a failed one) does not.
func TestCompactSLO(t *testing.T) {
	slo := SLO{TTFTMs: 200, TPOTMs: 50}
	r := RunRecord{
		ID: "r", Plan: Plan{Phases: Phases{Load: &Load{Goodput: &slo}}},
		Cells: []CellResult{
			{Key: "loaded", Status: CellMeasured, LoadPoints: []LoadPoint{{Point: 1, Repeat: 1, OfferedRate: 2}}},
			{Key: "failed", Status: CellFailed, LoadPoints: []LoadPoint{{Point: 1, Repeat: 1, OfferedRate: 2}}},
		},
	}
	e := Compact(r, "")
	if got := e.Cells[0].SLO; got == nil || *got != slo {
		t.Errorf("loaded cell SLO = %v, want %v", got, slo)
	}
	if got := e.Cells[1].SLO; got != nil {
		t.Errorf("failed cell SLO = %v, want none", got)
	}
	r.Plan.Phases.Load.Goodput.TTFTMs = 1
	if e.Cells[0].SLO.TTFTMs != 200 {
		t.Error("Compact shares the plan's SLO")
	}
}

// Every figure reads its own field of a compact cell, and keys are unique.
func TestFigures(t *testing.T) {
	c := CompactCell{DecodeTokensPerSecond: f(1), TTFTColdMs: f(2), TTFTWarmMs: f(3), Prefill1kTokensPerSecond: f(4),
		ContextPrefillTokensPerSecond: f(5), AggregateTokensPerSecond: f(6), ColdStartMs: f(7), PeakRssMB: f(8)}
	js, _ := json.Marshal(c)
	seen := map[string]bool{}
	for i, fig := range Figures {
		if got := fig.Get(c); got == nil || *got != float64(i+1) {
			t.Errorf("%s reads %v, want %d", fig.Key, deref(got), i+1)
		}
		if seen[fig.Key] || fig.Name == "" || fig.Unit == "" || !strings.Contains(string(js), `"`+fig.Field+`":`) {
			t.Errorf("figure %+v: duplicate key or no name/unit", fig.Key)
		}
		seen[fig.Key] = true
		if got, ok := FigureByKey(fig.Key); !ok || got.Name != fig.Name {
			t.Errorf("FigureByKey(%q)", fig.Key)
		}
	}
}
