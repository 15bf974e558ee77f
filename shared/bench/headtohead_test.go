package bench

import (
	"slices"
	"testing"
)

func TestPairs(t *testing.T) {
	cell := func(model, kind string) Cell { return Cell{Model: model, Kind: kind} }
	tests := []struct {
		name  string
		cells []Cell
		want  []Pair
	}{
		{"none without a reference", []Cell{cell("m", KindTree), cell("n", KindReference)}, nil},
		{"one tree, one reference", []Cell{cell("m", KindReference), cell("m", KindTree)}, []Pair{{"m", 1, 0}}},
		{"each tree with each reference of its model",
			[]Cell{cell("m", KindTree), cell("n", KindTree), cell("m", KindReference), cell("m", KindTree), cell("n", KindReference)},
			[]Pair{{"m", 0, 2}, {"n", 1, 4}, {"m", 3, 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (Plan{Cells: tt.cells}).Pairs(); !slices.Equal(got, tt.want) {
				t.Errorf("Pairs = %v, want %v", got, tt.want)
			}
			compact := make([]CompactCell, len(tt.cells))
			for i, c := range tt.cells {
				compact[i] = CompactCell{Model: c.Model, Kind: c.Kind}
			}
			if got := PairsOf(compact); !slices.Equal(got, tt.want) {
				t.Errorf("PairsOf = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHeadToHeads(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	spread := func(lo, hi float64) map[string]Range { return map[string]Range{"decode": {lo, hi}} }
	tests := []struct {
		name      string
		cand, ref CompactCell
		verdict   string
		figures   []string // each measured figure's key=verdict
	}{
		{"faster decode past both spreads",
			CompactCell{DecodeTokensPerSecond: f(120), Spread: spread(118, 122)},
			CompactCell{DecodeTokensPerSecond: f(100), Spread: spread(98, 102)},
			VerdictFaster, []string{"decode=faster"}},
		{"inside the spread is the same",
			CompactCell{DecodeTokensPerSecond: f(120), Spread: spread(90, 125)},
			CompactCell{DecodeTokensPerSecond: f(100), Spread: spread(95, 110)},
			VerdictSame, []string{"decode=same"}},
		{"slower cold TTFT, one sample past its floor; a figure on one side only left out",
			CompactCell{TTFTColdMs: f(200), DecodeTokensPerSecond: f(50)},
			CompactCell{TTFTColdMs: f(100)},
			VerdictSlower, []string{"ttft_cold=slower"}},
		{"nothing on both sides", CompactCell{}, CompactCell{}, VerdictSame, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cand.Model, tt.cand.Kind, tt.cand.Key = "m", KindTree, "cand"
			tt.ref.Model, tt.ref.Kind, tt.ref.Key = "m", KindReference, "ref"
			hs := HeadToHeads([]CompactCell{tt.ref, tt.cand}, HeadToHeadThreshold)
			if len(hs) != 1 {
				t.Fatalf("%d pairs, want 1", len(hs))
			}
			h := hs[0]
			var got []string
			for _, pf := range h.Figures {
				got = append(got, pf.Key+"="+pf.Verdict)
			}
			if h.Verdict != tt.verdict || !slices.Equal(got, tt.figures) || h.CandidateCell.Key != "cand" || h.ReferenceCell.Key != "ref" {
				t.Errorf("got %s %v (%s vs %s), want %s %v", h.Verdict, got, h.CandidateCell.Key, h.ReferenceCell.Key, tt.verdict, tt.figures)
			}
		})
	}
}

func TestSameRequests(t *testing.T) {
	s := func(phase string, run, attempt int, hash string) Sample {
		return Sample{Phase: phase, Run: run, Attempt: attempt, RequestHash: hash}
	}
	a := CellResult{Samples: []Sample{s(PhaseDecode, 1, 1, "x"), s(PhaseDecode, 2, 1, "y"), s(PhaseDecode, 2, 2, "z"), s(PhaseColdTTFT, 1, 1, "")}}
	b := CellResult{Samples: []Sample{s(PhaseDecode, 1, 1, "x"), s(PhaseDecode, 2, 1, "w"), s(PhaseColdTTFT, 1, 1, ""), s(PhaseWarmTTFT, 1, 1, "v")}}
	// decode 1: same; decode 2: differs; decode 2 attempt 2 and warm: one
	// side only; cold: no hash, never the same.
	if same, both := SameRequests(a, b); same != 1 || both != 3 {
		t.Errorf("SameRequests = %d of %d, want 1 of 3", same, both)
	}
}
