package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// OriginalPlan is a plan of the original module's runner (bench-serve.ts
// plan, schema 1: its scripts/bench/plan.ts), as the original kept them in
// <home>/metrics/bench/plans/. Its models are objects, its cells predeclared
// and each tree cell runs one of two source trees (baseline, candidate) in
// one of the runner's named configurations. Only what maps is read; the
// pins (commits, file hashes, the native library) are not checked here.
type OriginalPlan struct {
	Schema   int    `json:"schema"`
	Profile  string `json:"profile"`
	Seed     string `json:"seed"`
	Workload struct {
		DecodeTokens       int     `json:"decodeTokens"`
		ContextTokens      int     `json:"contextTokens"`
		DecodeRuns         int     `json:"decodeRuns"`
		TTFTRuns           int     `json:"ttftRuns"`
		AggregateStreams   int     `json:"aggregateStreams"`
		AggregateTokens    int     `json:"aggregateTokens"`
		AggregateContext   int     `json:"aggregateContext"`
		AggregateStaggerMs int     `json:"aggregateStaggerMs"`
		SpreadLimit        float64 `json:"spreadLimit"`
		WithContext        bool    `json:"withContext"`
	} `json:"workload"`
	Trees map[string]struct {
		Command []string `json:"command"`
	} `json:"trees"`
	References []struct {
		Label           string   `json:"label"`
		Command         []string `json:"command"`
		RegisterCommand []string `json:"registerCommand"`
		APIKey          string   `json:"apiKey"`
	} `json:"references"`
	Configurations []string `json:"configurations"`
	Models         []struct {
		ID        string `json:"id"`
		Path      string `json:"path"`
		ModelType string `json:"modelType"`
		Draft     *struct {
			Path string `json:"path"`
		} `json:"draft"`
	} `json:"models"`
	Cells []struct {
		Key           string `json:"key"`
		Model         string `json:"model"`
		Kind          string `json:"kind"`
		Tree          string `json:"tree"`
		Configuration string `json:"configuration"`
		Reference     string `json:"reference"`
		Skipped       string `json:"skipped"`
	} `json:"cells"`
}

// IsOriginalPlan tells the original runner's plans (a schema number and
// trees, which this module's plans never hold) from this module's.
func IsOriginalPlan(data []byte) bool {
	var probe struct {
		Schema *json.RawMessage `json:"schema"`
		Trees  *json.RawMessage `json:"trees"`
	}
	return json.Unmarshal(data, &probe) == nil && probe.Schema != nil && probe.Trees != nil
}

// originalConfigurations are the server arguments of the original
// runner's configurations (its CONFIGURATIONS); mtp2 and mtp3 add the
// model's draft at that depth.
var originalConfigurations = map[string][]string{
	"default": {}, "serial": {"--batch", "1"}, "mixed": {"--kv-quant", "config"}, "mtp2": {}, "mtp3": {},
}

// Plan is o as this module runs it: the same cells, servers started with
// the arguments the original gave them, its workload as the phases. The
// plan comes back filled as far as it maps (models, description, cells) so
// that a list can describe it; the error says each part that does not map,
// and such a plan must not be run.
func (o OriginalPlan) Plan() (Plan, error) {
	var why []string
	no := func(format string, args ...any) { why = append(why, fmt.Sprintf(format, args...)) }
	if o.Schema != 1 {
		no("schema %d: only the original's schema 1 is known", o.Schema)
	}
	p := Plan{Scope: o.Profile, Models: []string{}}
	refs := make([]string, 0, len(o.References))
	for i, r := range o.References {
		refs = append(refs, r.Label)
		if r.APIKey != "" {
			no("references[%d] (%.40q) needs a bearer key, which this runner does not send", i, r.Label)
		}
	}
	p.Description = fmt.Sprintf("the original runner's plan (bench-serve.ts, profile %s): configurations %s on trees baseline and candidate, references %s; "+
		"run here without its warmup, parity and restart phases and without checking its pins (tree commits, file hashes, native library)",
		o.Profile, strings.Join(o.Configurations, ", "), strings.Join(refs, ", "))
	w := o.Workload
	if w.AggregateContext != 0 || w.AggregateStaggerMs != 0 {
		no("workload.aggregateContext and aggregateStaggerMs: the concurrent phase here sends neither a long context nor staggered starts")
	}
	p.Phases = Phases{
		DecodeRuns: w.DecodeRuns, DecodeTokens: w.DecodeTokens, UnstableSpread: w.SpreadLimit,
		ColdRuns: w.TTFTRuns, WarmRuns: w.TTFTRuns, LongContextTokens: w.ContextTokens,
		Concurrency: w.AggregateStreams, ConcurrentTokens: w.AggregateTokens,
	}
	if !w.WithContext {
		p.Phases.LongContextTokens = -1
	}
	byID := map[string]int{}
	for i, m := range o.Models {
		p.Models = append(p.Models, m.ID)
		byID[m.ID] = i
	}
	for i, c := range o.Cells {
		cell, err := o.cell(c.Key, c.Model, c.Kind, c.Tree, c.Configuration, c.Reference, byID)
		if err != nil {
			no("cells[%d] (%.60q): %v", i, c.Key, err)
		}
		cell.Skip = c.Skipped
		p.Cells = append(p.Cells, cell)
	}
	if len(why) > 0 {
		return p, errors.New(strings.Join(why, "; "))
	}
	return p, nil
}

// cell is one of the original's predeclared cells as a cell here: its
// server's argv is the original's cellArgs less --ssd-cache (which served
// its restart phase, not run here).
func (o OriginalPlan) cell(key, model, kind, tree, configuration, reference string, byID map[string]int) (Cell, error) {
	c := Cell{Key: key, Model: model, Kind: kind, Server: Server{
		BaseURL: "http://127.0.0.1:{port}/v1", ReadyURL: "http://127.0.0.1:{port}/v1/models",
	}}
	i, ok := byID[model]
	if !ok {
		return c, fmt.Errorf("model %.40q is not among the plan's models", model)
	}
	m := o.Models[i]
	// Both servers are started on the model's path and name it so.
	c.Server.APIModel = m.Path
	serve := []string{"--model", m.Path, "--port", PortPlaceholder}
	switch kind {
	case KindTree:
		c.Configuration = configuration + "/" + tree
		args, known := originalConfigurations[configuration]
		t, hasTree := o.Trees[tree]
		switch {
		case !known:
			return c, fmt.Errorf("configuration %.40q is not one of the original runner's", configuration)
		case !hasTree || len(t.Command) == 0:
			return c, fmt.Errorf("tree %.40q has no command", tree)
		}
		argv := append(append(append([]string{}, t.Command...), serve...), "--no-open")
		argv = append(argv, args...)
		if depth, ok := strings.CutPrefix(configuration, "mtp"); ok && m.Draft != nil {
			argv = append(argv, "--draft-kind", "mtp", "--draft-model", m.Draft.Path, "--num-draft-tokens", depth)
		}
		c.Server.Argv = argv
	case KindReference:
		c.Configuration = reference
		for _, r := range o.References {
			if r.Label != reference {
				continue
			}
			cmd := r.Command
			if m.ModelType == "gemma4_unified" && len(r.RegisterCommand) > 0 {
				cmd = r.RegisterCommand // the stock server cannot load it
			}
			c.Server.Argv = append(append([]string{}, cmd...), serve...)
			return c, nil
		}
		return c, fmt.Errorf("reference %.40q is not among the plan's references", reference)
	default:
		return c, fmt.Errorf("kind %.20q is not tree or reference", kind)
	}
	return c, nil
}
