package runner

import (
	"context"
	"fmt"

	"github.com/mlx-bun/mlx-metrics/gpu/loadgen"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// parityPrompt is every parity probe's prompt: fixed, in every cell and
// run, so two servers' answers compare (no nonce: a cache serving it is
// harmless, the probe times nothing).
var parityPrompt = loadgen.Prompt(48, "parity")

// probe asks the cell's server the parity probes (bench.ProbeRaw and
// bench.ProbeChat) at temperature 0 and records the answers; a failed
// probe is recorded as such and fails nothing.
func (m *measurer) probe(ctx context.Context) {
	for _, p := range []struct{ kind, endpoint string }{
		{bench.ProbeRaw, loadgen.Completions}, {bench.ProbeChat, loadgen.ChatCompletions},
	} {
		if ctx.Err() != nil {
			return
		}
		res, err := m.client.Do(ctx, loadgen.Request{
			Endpoint: p.endpoint, Model: m.model, Prompt: parityPrompt, MaxTokens: bench.ProbeTokens,
			Timeout: m.timeout(48, bench.ProbeTokens), KeepText: bench.ProbeTextLimit,
		})
		pr := bench.Probe{Kind: p.kind, PromptTokens: res.PromptTokens, CompletionTokens: res.CompletionTokens,
			Finish: res.Finish, Text: res.Text}
		if err != nil {
			pr.Error = err.Error()
		}
		m.res.Probes = append(m.res.Probes, pr)
		if err != nil {
			fmt.Fprintf(m.run.o.Out, "parity probe %s failed: %v\n", p.kind, err)
			continue
		}
		fmt.Fprintf(m.run.o.Out, "parity probe %s: %d prompt tokens, %d generated\n", p.kind, pr.PromptTokens, pr.CompletionTokens)
	}
}
