package load

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/mlx-bun/mlx-metrics/gpu/loadgen"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// item is one request of a workload.
type item struct {
	prompt       string
	promptTokens int // about: the server's usage says how many
	maxTokens    int
}

// workload makes a point's requests. Every prompt opens with a nonce that
// names the run, the point, the repeat and the request, so no request is
// served from a prefix cache filled by an earlier point or run; only a
// shared-prefix workload's prefixes are shared, on purpose, and they come
// before the nonce.
type workload struct {
	w        bench.Workload
	prefixes []string
	convs    []conversation // sharegpt
}

func newWorkload(w bench.Workload, seed uint64) (*workload, error) {
	wl := &workload{w: w}
	switch w.Kind {
	case bench.WorkloadSharedPrefix:
		for i := range w.Prefixes {
			wl.prefixes = append(wl.prefixes, loadgen.Prompt(w.PrefixTokens, fmt.Sprintf("prefix-%d-%d", seed, i)))
		}
	case bench.WorkloadShareGPT:
		convs, err := readShareGPT(w.File, seed)
		if err != nil {
			return nil, err
		}
		wl.convs = convs
	}
	return wl, nil
}

// next is request i of a point, its lengths drawn from rng.
func (wl *workload) next(rng *rand.Rand, nonce string, i int) item {
	w := wl.w
	if w.Kind == bench.WorkloadShareGPT {
		c := wl.convs[i%len(wl.convs)]
		out := c.outputTokens
		if w.Output != (bench.Lengths{}) {
			out = draw(rng, w.Output)
		}
		return item{prompt: nonce + " " + c.prompt, promptTokens: c.promptTokens + 1, maxTokens: out}
	}
	in, out := draw(rng, w.Input), draw(rng, w.Output)
	it := item{prompt: loadgen.Prompt(in, nonce), promptTokens: in, maxTokens: out}
	if w.Kind == bench.WorkloadSharedPrefix && rng.Float64() < w.PrefixRatio {
		p := rng.IntN(len(wl.prefixes))
		it.prompt = wl.prefixes[p] + " " + it.prompt
		it.promptTokens += w.PrefixTokens
	}
	return it
}

// draw is one length of the distribution, at least 1 token.
func draw(rng *rand.Rand, n bench.Lengths) int {
	var v int
	switch n.Dist {
	case bench.DistUniform:
		v = n.Min + rng.IntN(n.Max-n.Min+1)
	case bench.DistNormal:
		v = int(math.Round(n.Mean + rng.NormFloat64()*n.Std))
	default:
		v = n.Tokens
	}
	return min(max(v, 1), bench.MaxLoadTokens)
}
