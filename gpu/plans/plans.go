// Package plans holds the bench-serve plans the module ships (smoke and
// standard against the reference engine, ollama-parallel against ollama)
// and builds plans from the options of `mlx-metrics bench plan`.
package plans

import (
	"strings"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// ReferenceModel is the model name the reference engine serves by default.
const ReferenceModel = "reference-sim"

// Ready returns the shipped profiles by name. The backend writes each one
// to <home>/metrics/bench/plans/<name>.json when that file is absent, so a
// fresh machine can run a benchmark without writing a plan first.
func Ready() map[string]bench.Plan {
	return map[string]bench.Plan{
		"smoke":           Smoke(),
		"standard":        Standard(),
		"ollama-parallel": OllamaParallel(),
	}
}

// Smoke measures one fast reference engine with the standard phases. The
// engine's rates are set high so the whole run takes a few seconds: it
// checks the machinery end to end, not a model.
func Smoke() bench.Plan {
	return bench.Plan{
		Scope:       bench.ScopeScoped,
		Description: "A few seconds: the reference engine (a simulator) with fast rates, every phase once through. Checks the benchmark machinery end to end.",
		Models:      []string{ReferenceModel},
		Cells: []bench.Cell{
			engineCell(bench.KindTree, "fast",
				"--decode-rate", "2000", "--prefill-rate", "100000", "--load-ms", "50"),
		},
	}
}

// Standard measures the reference engine at rates of a small model on a
// laptop GPU, with and without its prefix cache, so the report shows the
// cache's effect on warm TTFT. It takes a minute or two.
func Standard() bench.Plan {
	return bench.Plan{
		Scope:       bench.ScopeScoped,
		Description: "A minute or two: the reference engine (a simulator) at small-model rates (50 tok/s decode, 4000 tok/s prefill), with its prefix cache (tree) and without (reference).",
		Models:      []string{ReferenceModel},
		Cells: []bench.Cell{
			engineCell(bench.KindTree, "prefix-cache",
				"--decode-rate", "50", "--prefill-rate", "4000", "--load-ms", "400"),
			engineCell(bench.KindReference, "no-prefix-cache",
				"--decode-rate", "50", "--prefill-rate", "4000", "--load-ms", "400", "--prefix-cache-bytes", "0"),
		},
	}
}

// OllamaModel is the model OllamaParallel measures: a small one that
// `ollama pull` fetches.
const OllamaModel = "llama3.2:1b"

// OllamaParallel is a head-to-head on a real engine: ollama (on PATH)
// serving one model to four requests at once (the candidate) against one
// at a time (the reference), each started by the run on its own port and
// sent the same requests. Its context is 8,192 tokens a request, so the
// 4,096-token long-context prompt is not truncated (ollama's default is
// 2,048).
func OllamaParallel() bench.Plan {
	return bench.Plan{
		Scope: bench.ScopeScoped,
		Description: "A head-to-head on ollama (on PATH; first `ollama pull " + OllamaModel + "`): four requests at once (candidate) " +
			"against one at a time (reference), the same requests to both. Minutes on a GPU, longer on a CPU.",
		Models: []string{OllamaModel},
		Cells: []bench.Cell{
			ollamaCell(bench.KindTree, "parallel-4", "4"),
			ollamaCell(bench.KindReference, "parallel-1", "1"),
		},
		Phases: bench.Phases{LongContextTokens: 4096},
	}
}

// ollamaCell starts `ollama serve` on the runner's port with parallel
// request slots.
func ollamaCell(kind, configuration, parallel string) bench.Cell {
	return bench.Cell{
		Model:         OllamaModel,
		Kind:          kind,
		Configuration: configuration,
		Server: bench.Server{
			Argv: []string{"ollama", "serve"},
			Env: map[string]string{"OLLAMA_HOST": "127.0.0.1:" + bench.PortPlaceholder,
				"OLLAMA_NUM_PARALLEL": parallel, "OLLAMA_CONTEXT_LENGTH": "8192"},
			BaseURL:  "http://127.0.0.1:" + bench.PortPlaceholder + "/v1",
			ReadyURL: "http://127.0.0.1:" + bench.PortPlaceholder + "/v1/models",
		},
	}
}

// engineCell is a cell that starts `{self} engine` on the runner's port.
func engineCell(kind, configuration string, flags ...string) bench.Cell {
	argv := []string{bench.SelfPlaceholder, "engine", "--port", bench.PortPlaceholder, "--model", ReferenceModel}
	return bench.Cell{
		Model:         ReferenceModel,
		Kind:          kind,
		Configuration: configuration,
		Server: bench.Server{
			Argv:     append(argv, flags...),
			BaseURL:  "http://127.0.0.1:" + bench.PortPlaceholder + "/v1",
			ReadyURL: "http://127.0.0.1:" + bench.PortPlaceholder + "/health",
		},
	}
}

// ModelPlaceholder in Options.Argv stands for each model in turn.
const ModelPlaceholder = "{model}"

// Options is what `mlx-metrics bench plan` asks for: one cell per model,
// each started by Argv (the reference engine when empty), or, with Attach,
// each measuring the server already running at BaseURL.
type Options struct {
	// Attach measures the running server at BaseURL (required); Argv, Env
	// and Port stay empty, and ReadyURL may.
	Attach        bool
	Scope         string
	Description   string
	Models        []string
	Kind          string
	Configuration string
	// Argv starts the server; {model}, {port} and {self} are filled in.
	Argv           []string
	Env            map[string]string
	Port           int
	BaseURL        string
	ReadyURL       string
	APIModel       string
	ReadyTimeoutMs int64
	Phases         bench.Phases
}

// FromOptions builds a plan and validates it.
func FromOptions(o Options) (bench.Plan, error) {
	if o.Scope == "" {
		o.Scope = bench.ScopeScoped
	}
	if o.Kind == "" {
		o.Kind = bench.KindTree
	}
	if o.Configuration == "" {
		o.Configuration = "default"
	}
	if len(o.Models) == 0 {
		o.Models = []string{ReferenceModel}
	}
	if o.Attach {
		return attachPlan(o)
	}
	argv := o.Argv
	if len(argv) == 0 {
		argv = []string{bench.SelfPlaceholder, "engine", "--port", bench.PortPlaceholder, "--model", ModelPlaceholder}
		if o.ReadyURL == "" {
			o.ReadyURL = "http://127.0.0.1:" + bench.PortPlaceholder + "/health"
		}
	}
	if o.BaseURL == "" {
		o.BaseURL = "http://127.0.0.1:" + bench.PortPlaceholder + "/v1"
	}
	if o.ReadyURL == "" {
		// Every OpenAI-compatible server lists its models once it serves.
		o.ReadyURL = strings.TrimRight(o.BaseURL, "/") + "/models"
	}
	p := bench.Plan{Scope: o.Scope, Description: o.Description, Models: o.Models, Phases: o.Phases}
	for _, m := range o.Models {
		cellArgv := make([]string, len(argv))
		for i, a := range argv {
			cellArgv[i] = strings.ReplaceAll(a, ModelPlaceholder, m)
		}
		p.Cells = append(p.Cells, bench.Cell{
			Model: m, Kind: o.Kind, Configuration: o.Configuration,
			Server: bench.Server{
				Argv: cellArgv, Env: o.Env, Port: o.Port,
				BaseURL: o.BaseURL, ReadyURL: o.ReadyURL,
				APIModel: o.APIModel, ReadyTimeoutMs: o.ReadyTimeoutMs,
			},
		})
	}
	return p, p.Validate()
}

// attachPlan is one attached cell per model, all at the same server; with
// no ReadyURL the runner checks {base}/models, then /health.
func attachPlan(o Options) (bench.Plan, error) {
	p := bench.Plan{Scope: o.Scope, Description: o.Description, Models: o.Models, Phases: o.Phases}
	for _, m := range o.Models {
		p.Cells = append(p.Cells, bench.Cell{
			Model: m, Kind: o.Kind, Configuration: o.Configuration,
			Server: bench.Server{
				Attach: true, Argv: o.Argv, Env: o.Env, Port: o.Port,
				BaseURL: strings.TrimRight(o.BaseURL, "/"), ReadyURL: o.ReadyURL,
				APIModel: o.APIModel, ReadyTimeoutMs: o.ReadyTimeoutMs,
			},
		})
	}
	return p, p.Validate()
}
