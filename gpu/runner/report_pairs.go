package runner

import (
	"fmt"
	"strings"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// headToHead is report.md's section on the plan's pairs (bench.Pairs):
// each figure of the candidate beside the reference's, judged by the
// compare rule, and whether the two were sent the same requests.
func headToHead(rec bench.RunRecord) string {
	cells := make([]bench.CompactCell, len(rec.Cells))
	for i, c := range rec.Cells {
		cells[i] = bench.CompactCellOf(c)
	}
	hs := bench.HeadToHeads(cells, bench.HeadToHeadThreshold)
	if len(hs) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Head to head\n\nEach candidate (tree) against its model's reference, sent the same requests; a verdict is the candidate's. Threshold %.0f %%: %s.\n",
		100*bench.HeadToHeadThreshold, bench.CompareRule)
	for _, h := range hs {
		same, both := bench.SameRequests(rec.Cells[h.Candidate], rec.Cells[h.Reference])
		fmt.Fprintf(&b, "\n### %s against %s: %s\n\n%d of %d requests sent to both were identical (by their hash in run.json).\n",
			h.CandidateCell.Key, h.ReferenceCell.Key, h.Verdict, same, both)
		fmt.Fprintf(&b, "Parity: %s.\n", bench.ParityWord(h.Parity))
		for _, v := range h.Parity {
			fmt.Fprintf(&b, "- %s probe: %s (%s)\n", v.Kind, v.Verdict, v.Detail)
		}
		b.WriteString("\n")
		if len(h.Figures) == 0 {
			b.WriteString("No figure was measured in both.\n")
			continue
		}
		b.WriteString("| figure | candidate | reference | candidate / reference | verdict |\n|---|--:|--:|--:|---|\n")
		for _, f := range h.Figures {
			v := f.Verdict
			if f.Why != "" {
				v += " (" + f.Why + ")"
			}
			fmt.Fprintf(&b, "| %s %s | %s | %s | %.2f | %s |\n", f.Name, f.Unit, figure(f.Figure, h.CandidateCell), figure(f.Figure, h.ReferenceCell), f.Candidate/f.Reference, v)
		}
	}
	return b.String()
}
