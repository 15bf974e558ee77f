package runner

import "github.com/mlx-bun/mlx-metrics/shared/bench"

// requestGroup is the cell whose requests cell i is sent: the plan's first
// cell of the same model, so every cell of a model (a head-to-head's
// candidate and reference among them) gets identical requests, each its
// own fresh prompts. A cell attached to the same server as that first one
// is its own group: one server's prompt cache would serve the later cell
// what the earlier one filled.
func requestGroup(p bench.Plan, i int) int {
	c := p.Cells[i]
	for j := range i {
		o := p.Cells[j]
		if o.Model != c.Model {
			continue
		}
		if o.Server.Attach && c.Server.Attach && o.Server.BaseURL == c.Server.BaseURL {
			return i
		}
		return j
	}
	return i
}
