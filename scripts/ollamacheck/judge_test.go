package main

import (
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

func TestComplete(t *testing.T) {
	ms := 812.0
	phases := bench.Phases{LongContextTokens: -1}
	measured := func(extra ...bench.Sample) []bench.Sample {
		s := []bench.Sample{{Phase: bench.PhaseDecode}, {Phase: bench.PhaseColdTTFT}, {Phase: bench.PhaseWarmTTFT}, {Phase: bench.PhaseConcurrent}}
		return append(s, extra...)
	}
	hashed := func(h string) []bench.Sample {
		s := measured()
		for i := range s {
			s[i].RequestHash = h + s[i].Phase
		}
		return s
	}
	probes := func(prompt int64) []bench.Probe {
		return []bench.Probe{{Kind: bench.ProbeRaw, PromptTokens: prompt, CompletionTokens: 2, Text: "ab"}}
	}
	pairPlan := bench.Plan{Phases: phases, Cells: []bench.Cell{{Model: "m", Kind: bench.KindTree}, {Model: "m", Kind: bench.KindReference}}}
	tests := []struct {
		name    string
		rec     bench.RunRecord
		started bool
		parity  string
		want    string // a part of the error; "" for none
	}{
		{"attached, every phase", bench.RunRecord{Complete: true, Plan: bench.Plan{Phases: phases},
			Cells: []bench.CellResult{{Key: "c", Status: bench.CellMeasured, Samples: measured()}}}, false, "", ""},
		{"started, cold start measured", bench.RunRecord{Complete: true, Plan: bench.Plan{Phases: phases},
			Cells: []bench.CellResult{{Key: "c", Status: bench.CellMeasured, ColdStartMs: &ms, Samples: measured()}}}, true, "", ""},
		{"started, no cold start", bench.RunRecord{Complete: true, Plan: bench.Plan{Phases: phases},
			Cells: []bench.CellResult{{Key: "c", Status: bench.CellMeasured, Samples: measured()}}}, true, "", "c: cold start not measured"},
		{"a phase with a failed run", bench.RunRecord{Complete: true, Plan: bench.Plan{Phases: phases},
			Cells: []bench.CellResult{{Key: "c", Status: bench.CellMeasured, Samples: measured(bench.Sample{Phase: bench.PhaseDecode, Error: "early stop"})}}}, false, "", "c: phase decode: 1 measured, 1 failed"},
		{"a phase missing", bench.RunRecord{Complete: true, Plan: bench.Plan{Phases: phases},
			Cells: []bench.CellResult{{Key: "c", Status: bench.CellMeasured, Samples: measured()[:3]}}}, false, "", "c: phase concurrent: 0 measured"},
		{"incomplete", bench.RunRecord{Plan: bench.Plan{Phases: phases}, Problems: []string{"cancelled"},
			Cells: []bench.CellResult{{Key: "c", Status: bench.CellFailed, Samples: measured()}}}, false, "", "not complete: cancelled; c ended failed"},
		{"a pair sent the same requests", bench.RunRecord{Complete: true, Plan: pairPlan,
			Cells: []bench.CellResult{{Key: "c", Status: bench.CellMeasured, Samples: hashed("x")}, {Key: "r", Status: bench.CellMeasured, Samples: hashed("x")}}}, false, "", ""},
		{"a pair's parity as expected", bench.RunRecord{Complete: true, Plan: pairPlan,
			Cells: []bench.CellResult{{Key: "c", Status: bench.CellMeasured, Samples: hashed("x"), Probes: probes(50)}, {Key: "r", Status: bench.CellMeasured, Samples: hashed("x"), Probes: probes(90)}}}, false, "raw: tokenizer drift", ""},
		{"a pair's parity not as expected", bench.RunRecord{Complete: true, Plan: pairPlan,
			Cells: []bench.CellResult{{Key: "c", Status: bench.CellMeasured, Samples: hashed("x"), Probes: probes(50)}, {Key: "r", Status: bench.CellMeasured, Samples: hashed("x"), Probes: probes(50)}}}, false, "raw: tokenizer drift", `c and r: parity "parity", want "raw: tokenizer drift"`},
		{"a pair sent different requests", bench.RunRecord{Complete: true, Plan: pairPlan,
			Cells: []bench.CellResult{{Key: "c", Status: bench.CellMeasured, Samples: hashed("x")}, {Key: "r", Status: bench.CellMeasured, Samples: hashed("y")}}}, false, "", "c and r: 0 of 4 requests sent to both identical"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := complete(tt.rec, expect{started: tt.started, identical: true, parity: tt.parity})
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("complete: %v, want %q", err, tt.want)
			}
		})
	}
}
