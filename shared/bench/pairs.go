package bench

// Pair is a head-to-head of one model: a candidate cell (kind tree) and a
// reference cell (kind reference), which the runner sends identical
// requests and the views set side by side. Indexes are the plan's (and
// the run's, and its history entry's) cells.
type Pair struct {
	Model     string `json:"model"`
	Candidate int    `json:"candidate"`
	Reference int    `json:"reference"`
}

// Pairs are the plan's head-to-heads: each tree cell of a model with each
// reference cell of that model, in plan order; a model with no reference
// cell has none.
func (p Plan) Pairs() []Pair {
	return pairs(len(p.Cells), func(i int) (string, string) { return p.Cells[i].Kind, p.Cells[i].Model })
}

// PairsOf are the head-to-heads of a history entry's cells, by the rule
// of Plan.Pairs.
func PairsOf(cells []CompactCell) []Pair {
	return pairs(len(cells), func(i int) (string, string) { return cells[i].Kind, cells[i].Model })
}

func pairs(n int, cell func(int) (kind, model string)) []Pair {
	var out []Pair
	for i := range n {
		kind, model := cell(i)
		if kind != KindTree {
			continue
		}
		for j := range n {
			if k, m := cell(j); k == KindReference && m == model {
				out = append(out, Pair{Model: model, Candidate: i, Reference: j})
			}
		}
	}
	return out
}

// SameRequests counts the requests both cells sent (one phase, run and
// attempt of each: Sample.RequestHash) and how many of them were the same
// by their hash; a sample without a hash is never the same.
func SameRequests(a, b CellResult) (same, both int) {
	type key struct {
		phase        string
		run, attempt int
	}
	hashes := map[key]string{}
	for _, s := range a.Samples {
		hashes[key{s.Phase, s.Run, s.Attempt}] = s.RequestHash
	}
	for _, s := range b.Samples {
		if h, ok := hashes[key{s.Phase, s.Run, s.Attempt}]; ok {
			both++
			if h != "" && h == s.RequestHash {
				same++
			}
		}
	}
	return same, both
}
