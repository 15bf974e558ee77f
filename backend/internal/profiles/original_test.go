package profiles

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// originalPlan is a plan in the shape the original module's runner wrote
// (`bench-serve.ts plan`: scripts/bench/plan.ts of joshuarossi/mlx-bun at
// 0ee65cced0e5df0645357df573d09d289134bc2a, schema 1), with its predeclared
// cells as its planCells makes them; edit changes it before it is written.
func originalPlan(edit func(map[string]any)) string {
	pin := []map[string]any{{"name": "model.safetensors", "bytes": 1 << 30, "sha256": strings.Repeat("a", 64)}}
	tree := func(root string) map[string]any {
		return map[string]any{"root": root, "commit": strings.Repeat("b", 40), "command": []string{"bun", root + "/src/cli.ts", "serve"}}
	}
	p := map[string]any{
		"schema": 1, "profile": "scoped", "seed": "bench-serve-v2",
		"workload": map[string]any{"decodeTokens": 64, "contextTokens": 4096, "decodeRuns": 3, "ttftRuns": 2,
			"aggregateStreams": 4, "aggregateTokens": 128, "aggregateContext": 0, "aggregateStaggerMs": 0,
			"spreadLimit": 1.15, "withContext": false},
		"trees":          map[string]any{"baseline": tree("/src/main"), "candidate": tree("/src/feature")},
		"references":     []map[string]any{{"label": "mlx-lm", "command": []string{"/venv/bin/python", "-m", "mlx_lm.server"}}},
		"configurations": []string{"default", "mtp2"},
		"models": []map[string]any{{"id": "cpm5", "label": "MiniCPM5-1B", "path": "/hub/cpm5", "modelType": "minicpm",
			"kvConfig": false, "packedTrellis": false, "files": pin}},
		"native": map[string]any{"library": "/lib/libmlx.dylib", "files": pin},
		"cells": []map[string]any{
			{"key": "cpm5/default/baseline", "model": "cpm5", "kind": "tree", "tree": "baseline", "configuration": "default", "order": 0},
			{"key": "cpm5/default/candidate", "model": "cpm5", "kind": "tree", "tree": "candidate", "configuration": "default", "order": 1},
			{"key": "cpm5/mtp2/candidate", "model": "cpm5", "kind": "tree", "tree": "candidate", "configuration": "mtp2", "order": 2,
				"skipped": "no MTP companion (--draft) for this model"},
			{"key": "cpm5/mtp2/baseline", "model": "cpm5", "kind": "tree", "tree": "baseline", "configuration": "mtp2", "order": 3,
				"skipped": "no MTP companion (--draft) for this model"},
			{"key": "cpm5/mlx-lm", "model": "cpm5", "kind": "reference", "reference": "mlx-lm", "order": 4},
		},
	}
	if edit != nil {
		edit(p)
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestOriginalPlans(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		runnable  bool
		wantError []string // in Load's error and the listing's
	}{
		{"maps", originalPlan(nil), true, nil},
		{"a reference with a key and a staggered aggregate", originalPlan(func(p map[string]any) {
			p["references"].([]map[string]any)[0]["apiKey"] = "secret"
			p["workload"].(map[string]any)["aggregateStaggerMs"] = 25
		}), false, []string{"original runner's plan", "bearer key", "aggregateStaggerMs"}},
		{"an unknown configuration", originalPlan(func(p map[string]any) {
			p["cells"].([]map[string]any)[0]["configuration"] = "turbo"
		}), false, []string{"configuration \"turbo\""}},
		{"malformed", `{"schema": 1, "trees": {}, "models": "cpm5"}`, false, []string{"original runner's plan, unreadable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(t.TempDir())
			if err := os.WriteFile(d.FileFor("orig"), []byte(tt.body), 0o644); err != nil {
				t.Fatal(err)
			}
			p, err := d.Load("orig")
			list, lerr := d.List()
			if lerr != nil || len(list) != 1 {
				t.Fatalf("List: %v %+v", lerr, list)
			}
			prof := list[0]
			if tt.runnable {
				if err != nil || prof.Error != "" {
					t.Fatalf("Load: %v; listed error %q", err, prof.Error)
				}
				if prof.Scope != "scoped" || !slices.Equal(prof.Models, []string{"cpm5"}) || prof.Cells != 5 ||
					!strings.Contains(prof.Description, "without its warmup, parity and restart phases") {
					t.Errorf("listed %+v", prof)
				}
				c := p.Cells[1]
				want := []string{"bun", "/src/feature/src/cli.ts", "serve", "--model", "/hub/cpm5", "--port", "{port}", "--no-open"}
				if c.Key != "cpm5/default/candidate" || c.Configuration != "default/candidate" || !slices.Equal(c.Server.Argv, want) {
					t.Errorf("cell %+v", c)
				}
				ref := p.Cells[4].Server.Argv
				if p.Cells[4].Configuration != "mlx-lm" || !slices.Equal(ref, []string{"/venv/bin/python", "-m", "mlx_lm.server", "--model", "/hub/cpm5", "--port", "{port}"}) {
					t.Errorf("reference %+v", p.Cells[4])
				}
				if p.Cells[2].Skip == "" || p.Phases.LongContextTokens != -1 || p.Phases.DecodeRuns != 3 || p.Phases.ColdRuns != 2 {
					t.Errorf("skip %q, phases %+v", p.Cells[2].Skip, p.Phases)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Load: %v, want ErrInvalid", err)
			}
			for _, w := range tt.wantError {
				if !strings.Contains(err.Error(), w) || !strings.Contains(prof.Error, w) {
					t.Errorf("error %q / listed %q: want %q", err, prof.Error, w)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error echoes the key: %q", err)
			}
			if tt.name != "malformed" && (!slices.Equal(prof.Models, []string{"cpm5"}) || prof.Scope != "scoped") {
				t.Errorf("listed %+v: want its models and scope though it cannot run", prof)
			}
		})
	}
}
