package bench

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestHistoryEntryCheck(t *testing.T) {
	now := time.UnixMilli(1796280000000)
	good := func() HistoryEntry {
		return HistoryEntry{
			ID: "20261203T100000Z-ab12cd", Profile: "smoke", StartedAt: 1796270000000, FinishedAt: 1796270060000,
			Cells: []CompactCell{{Key: "m/tree/a", DecodeTokensPerSecond: f(41.5), Spread: map[string]Range{"decode": {Min: 40, Max: 43}}}},
		}
	}
	tests := []struct {
		name string
		edit func(e *HistoryEntry)
		want string // in the error; "" for none
	}{
		{"good", func(*HistoryEntry) {}, ""},
		{"id with a slash", func(e *HistoryEntry) { e.ID = "../etc" }, "id:"},
		{"started before 2020", func(e *HistoryEntry) { e.StartedAt = 1000 }, "startedAt"},
		{"started next week", func(e *HistoryEntry) {
			e.StartedAt = now.Add(7 * 24 * time.Hour).UnixMilli()
			e.FinishedAt = e.StartedAt
		}, "startedAt"},
		{"finished before it started", func(e *HistoryEntry) { e.FinishedAt = e.StartedAt - 1 }, "finishedAt"},
		{"a figure past the bounds", func(e *HistoryEntry) { e.Cells[0].DecodeTokensPerSecond = f(1e308) }, "decodeTokensPerSecond"},
		{"a negative figure", func(e *HistoryEntry) { e.Cells[0].TTFTColdMs = f(-1) }, "ttftColdMs"},
		{"a NaN figure", func(e *HistoryEntry) { e.Cells[0].PeakRssMB = f(math.NaN()) }, "peakRssMB"},
		{"a spread upside down", func(e *HistoryEntry) { e.Cells[0].Spread["decode"] = Range{Min: 5, Max: 1} }, "spread"},
		{"a spread to infinity", func(e *HistoryEntry) { e.Cells[0].Spread["decode"] = Range{Max: math.Inf(1)} }, "spread"},
		{"too many cells", func(e *HistoryEntry) { e.Cells = make([]CompactCell, MaxCells+1) }, "cells"},
		{"too many problems", func(e *HistoryEntry) { e.Problems = make([]string, MaxProblems+1) }, "problems"},
		{"a huge note", func(e *HistoryEntry) { e.Cells[0].Note = strings.Repeat("x", MaxText+1) }, "text"},
		{"negative memory", func(e *HistoryEntry) { e.Machine.MemoryBytes = -1 }, "memoryBytes"},
		{"parity probes", func(e *HistoryEntry) {
			e.Cells[0].Probes = []Probe{{Kind: ProbeRaw, PromptTokens: 48, CompletionTokens: 32, Text: strings.Repeat("x", ProbeTextLimit)}}
		}, ""},
		{"a huge probe text", func(e *HistoryEntry) { e.Cells[0].Probes = []Probe{{Text: strings.Repeat("x", MaxText+1)}} }, "text"},
		{"too many probes", func(e *HistoryEntry) { e.Cells[0].Probes = make([]Probe, MaxProbes+1) }, "probes"},
		{"a negative probe count", func(e *HistoryEntry) { e.Cells[0].Probes = []Probe{{PromptTokens: -1}} }, "probes[0]"},
		{"a load point", func(e *HistoryEntry) {
			e.Cells[0].LoadPoints = []LoadPoint{{Point: 1, Repeat: 1, OfferedRate: 2, Requests: 10, Completed: 10, TTFT: Dist{Count: 10, Median: 50}}}
			e.Cells[0].MaxRate = &MaxRate{Rate: 2, MinShare: 0.95}
			e.Source = &Source{Tool: "vllm bench serve", Version: "0.11.0"}
		}, ""},
		{"a load point's NaN", func(e *HistoryEntry) { e.Cells[0].LoadPoints = []LoadPoint{{TTFT: Dist{P99: math.NaN()}}} }, "loadPoints[0]"},
		{"a load point's negative count", func(e *HistoryEntry) { e.Cells[0].LoadPoints = []LoadPoint{{Requests: -1}} }, "loadPoints[0]"},
		{"a NaN goodput", func(e *HistoryEntry) { g := math.Inf(1); e.Cells[0].LoadPoints = []LoadPoint{{Goodput: &g}} }, "loadPoints[0]"},
		{"a max rate below 0", func(e *HistoryEntry) { e.Cells[0].MaxRate = &MaxRate{Rate: -3} }, "maxRate"},
		{"a huge source", func(e *HistoryEntry) { e.Source = &Source{Tool: strings.Repeat("t", MaxText+1)} }, "text"},
		{"a host name at its bound", func(e *HistoryEntry) { e.Machine.Host = strings.Repeat("h", MaxHost) }, ""},
		{"a host name past its bound", func(e *HistoryEntry) { e.Machine.Host = strings.Repeat("h", MaxHost+1) }, "machine.host"},
		{"over a megabyte, each text in bounds", func(e *HistoryEntry) {
			note := strings.Repeat("x", MaxText)
			e.Cells = make([]CompactCell, 300)
			for i := range e.Cells {
				e.Cells[i] = CompactCell{Key: "k", Note: note}
			}
		}, "encoded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := good()
			tt.edit(&e)
			err := e.Check(now)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Check: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Check = %v, want an error about %s", err, tt.want)
			case err != nil && len(err.Error()) > 200:
				t.Fatalf("unbounded message: %d bytes", len(err.Error()))
			}
		})
	}
}
