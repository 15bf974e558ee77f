package bench

// HeadToHeadThreshold is the change a head-to-head figure must pass to
// differ, as `bench compare`'s default --threshold (5 %).
const HeadToHeadThreshold = 0.05

// HeadToHead is one pair's figures, candidate against reference by the
// compare rule (CompareRule): Verdict faster means the candidate is.
type HeadToHead struct {
	Pair
	CandidateCell, ReferenceCell CompactCell
	Figures                      []PairFigure
	// Verdict combines the figures' (memory apart); "same" when no figure
	// was measured on both sides.
	Verdict string
	// Parity compares the two cells' parity probes, kind by kind.
	Parity []ParityVerdict
}

// PairFigure is one figure measured in both cells of a pair.
type PairFigure struct {
	Figure
	Candidate, Reference float64
	Judgement
}

// HeadToHeads judges every pair of a run's cells (PairsOf): each figure
// both measured, the reference as run A and the candidate as run B of a
// comparison.
func HeadToHeads(cells []CompactCell, threshold float64) []HeadToHead {
	var out []HeadToHead
	for _, p := range PairsOf(cells) {
		h := HeadToHead{Pair: p, CandidateCell: cells[p.Candidate], ReferenceCell: cells[p.Reference]}
		var verdicts []string
		for _, f := range Figures {
			c, r := f.Get(h.CandidateCell), f.Get(h.ReferenceCell)
			if c == nil || r == nil {
				continue
			}
			var rc, rr *Range
			if s, ok := f.Spread(h.CandidateCell); ok {
				rc = &s
			}
			if s, ok := f.Spread(h.ReferenceCell); ok {
				rr = &s
			}
			j := Judge(f, *r, *c, rr, rc, threshold)
			h.Figures = append(h.Figures, PairFigure{Figure: f, Candidate: *c, Reference: *r, Judgement: j})
			verdicts = append(verdicts, j.Verdict)
		}
		h.Verdict = Combine(verdicts)
		h.Parity = Parity(h.CandidateCell.Probes, h.ReferenceCell.Probes)
		out = append(out, h)
	}
	return out
}
