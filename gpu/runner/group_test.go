package runner

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

func TestRequestGroup(t *testing.T) {
	started := func(model, kind string) bench.Cell {
		return bench.Cell{Model: model, Kind: kind, Server: bench.Server{Argv: []string{"s"}, BaseURL: "http://127.0.0.1:{port}/v1"}}
	}
	attached := func(model, kind, url string) bench.Cell {
		return bench.Cell{Model: model, Kind: kind, Server: bench.Server{Attach: true, BaseURL: url}}
	}
	tests := []struct {
		name  string
		cells []bench.Cell
		want  []int
	}{
		{"one model's cells share the first one's requests",
			[]bench.Cell{started("m", bench.KindTree), started("m", bench.KindReference), started("m", bench.KindReference)}, []int{0, 0, 0}},
		{"each model its own",
			[]bench.Cell{started("a", bench.KindTree), started("b", bench.KindTree), started("a", bench.KindReference)}, []int{0, 1, 0}},
		{"two servers attached",
			[]bench.Cell{attached("m", bench.KindTree, "http://127.0.0.1:1/v1"), attached("m", bench.KindReference, "http://127.0.0.1:2/v1")}, []int{0, 0}},
		{"one server attached twice: its cache would serve the second",
			[]bench.Cell{attached("m", bench.KindTree, "http://127.0.0.1:1/v1"), attached("m", bench.KindReference, "http://127.0.0.1:1/v1")}, []int{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := bench.Plan{Cells: tt.cells}
			for i, want := range tt.want {
				if got := requestGroup(p, i); got != want {
					t.Errorf("cell %d: group %d, want %d", i, got, want)
				}
			}
		})
	}
}

// A head-to-head's candidate and reference are sent the same requests,
// each phase's run by run, and another model's cell different ones;
// report.md sets the pair's figures side by side with the verdicts.
func TestHeadToHeadSendsIdenticalRequests(t *testing.T) {
	flags := []string{"--decode-rate", "2000", "--prefill-rate", "100000", "--load-ms", "0"}
	other := engineCell(bench.KindTree, "other", flags...)
	other.Model = "other-sim"
	other.Server.Argv = append(other.Server.Argv, "--model", "other-sim")
	plan := bench.Plan{Scope: bench.ScopeScoped, Models: []string{"reference-sim", "other-sim"},
		Cells: []bench.Cell{
			engineCell(bench.KindTree, "candidate", flags...),
			other,
			engineCell(bench.KindReference, "reference", flags...),
		},
		Phases: bench.Phases{DecodeRuns: 2, DecodeTokens: 16, ColdRuns: 2, WarmRuns: 2, ColdPromptTokens: 64,
			LongContextTokens: 256, LongDecodeTokens: 8, Concurrency: 2, ConcurrentTokens: 8}}
	rec, _ := runPlan(t, context.Background(), plan, &syncBuffer{})
	if !rec.Complete {
		t.Fatalf("run incomplete: %v", rec.Problems)
	}
	hashes := func(c bench.CellResult) map[string]string {
		m := map[string]string{}
		for _, s := range c.Samples {
			if s.RequestHash == "" {
				t.Errorf("%s: sample %s/%d without a request hash", c.Key, s.Phase, s.Run)
			}
			m[fmt.Sprintf("%s/%d/%d", s.Phase, s.Run, s.Attempt)] = s.RequestHash
		}
		return m
	}
	cand, oth, ref := hashes(rec.Cells[0]), hashes(rec.Cells[1]), hashes(rec.Cells[2])
	// A run retried on a busy machine (a burst of chunks in one packet
	// leaves no decode interval) is a request of its own in one cell only;
	// the first attempt's requests are in both.
	common := 0
	seen := map[string]bool{}
	for k, h := range cand {
		if r, ok := ref[k]; ok {
			common++
			if r != h {
				t.Errorf("%s: candidate sent %s, reference %s", k, h, r)
			}
		}
		if oth[k] == h {
			t.Errorf("%s: another model's cell was sent the candidate's request", k)
		}
		if seen[h] && !strings.HasPrefix(k, bench.PhaseWarmTTFT) {
			t.Errorf("%s: a request sent twice in one cell", k)
		}
		seen[h] = true
	}
	if common < 2+2+2+1+1 {
		t.Errorf("%d requests sent to both, want at least the 8 of the first attempts: %v against %v", common, cand, ref)
	}
	for _, c := range rec.Cells {
		if len(c.Probes) != 2 || c.Probes[0].Kind != bench.ProbeRaw || c.Probes[1].Kind != bench.ProbeChat ||
			c.Probes[0].Text == "" || c.Probes[0].PromptTokens == 0 || c.Probes[1].Error != "" {
			t.Errorf("%s: parity probes %+v", c.Key, c.Probes)
		}
	}
	report := Report(rec)
	for _, want := range []string{"## Head to head", "### reference-sim/tree/candidate against reference-sim/reference/reference: ",
		fmt.Sprintf("%d of %d requests sent to both were identical", common, common), "| decode tok/s | ",
		// Two configurations of one engine and model: the same answers.
		"Parity: parity.", "- raw probe: parity (prompt tokens ", "- chat probe: parity ("} {
		if !strings.Contains(report, want) {
			t.Errorf("report.md lacks %q:\n%s", want, report)
		}
	}
	if strings.Count(report, "### ") != 1 {
		t.Errorf("report.md: want one pair (other-sim has no reference):\n%s", report)
	}
}
