package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// quiet sends the real stdout and stderr (usage, notes) to /dev/null.
func quiet(t *testing.T) {
	t.Helper()
	stdout, stderr := os.Stdout, os.Stderr
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout, os.Stderr = null, null
	t.Cleanup(func() { os.Stdout, os.Stderr = stdout, stderr; null.Close() })
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBenchRunAndPlanExitCodes(t *testing.T) {
	dir := t.TempDir()
	invalid := writeFile(t, dir, "invalid.json", `{"scope":"scoped","models":["m"],"cells":[{"model":"m","kind":"tree","server":{"argv":[]}}]}`)
	unknownField := writeFile(t, dir, "typo.json", `{"scope":"all","cells":[],"phasess":{}}`)
	notJSON := writeFile(t, dir, "bad.json", `{`)
	existing := writeFile(t, dir, "existing.json", `{}`)
	tests := []struct {
		args []string
		want int
	}{
		{[]string{"bench"}, 2},
		{[]string{"bench", "--help"}, 0},
		{[]string{"bench", "nope"}, 2},
		{[]string{"bench", "run"}, 2},
		{[]string{"bench", "run", "-h"}, 0},
		{[]string{"bench", "run", "--plan", filepath.Join(dir, "missing.json"), "--out", dir}, 2},
		{[]string{"bench", "run", "--plan", invalid, "--out", dir}, 2},
		{[]string{"bench", "run", "--plan", unknownField, "--out", dir}, 2},
		{[]string{"bench", "run", "--plan", notJSON, "--out", dir}, 2},
		{[]string{"bench", "run", "--plan", invalid, "--out", dir, "extra"}, 2},
		{[]string{"bench", "plan"}, 0}, // the plan on stdout, as --out - has it
		{[]string{"bench", "plan", "-h"}, 0},
		{[]string{"bench", "plan", "--out", "-"}, 0},
		{[]string{"bench", "plan", "--out", "-", "--kind", "candidate"}, 2},
		{[]string{"bench", "plan", "--out", "-", "--env", "NOEQUALS"}, 2},
		{[]string{"bench", "plan", "--out", "-", "--base-url", "localhost:1/v1"}, 2},
		{[]string{"bench", "plan", "--out", existing}, 2},
		{[]string{"bench", "plan", "--out", existing, "--force"}, 0},
		{[]string{"engine", "--decode-rate", "0"}, 2},
		{[]string{"engine", "--bogus"}, 2},
		{[]string{"engine", "extra"}, 2},
		{[]string{"engine", "-h"}, 0},
	}
	quiet(t)
	for _, tc := range tests {
		if got := run(context.Background(), tc.args); got != tc.want {
			t.Errorf("run(%q) = %d, want %d", tc.args, got, tc.want)
		}
	}
	// --force wrote a valid plan of the reference engine.
	p, err := readPlan(existing)
	if err != nil {
		t.Fatal(err)
	}
	if p.Cells[0].Server.Argv[0] != bench.SelfPlaceholder {
		t.Errorf("plan %+v", p)
	}
}

func TestReadPlanMessages(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		body, want string
	}{
		{`{"scope":"all","cells":[],"phasess":{}}`, `unknown field "phasess"`},
		{`{"scope":"x","cells":[]}`, `scope: "x" is not`},
		{`{"scope":"all","cells":[]}`, "the plan has no cells"},
		{``, "the file is empty"},
		{" \n", "the file is empty"},
		{`{"scope":"all","cells":[]} {"scope":"all"}`, "more follows"},
	}
	for i, tt := range tests {
		_, err := readPlan(writeFile(t, dir, "p"+string(rune('a'+i))+".json", tt.body))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("readPlan(%s) = %v, want %q", tt.body, err, tt.want)
		}
	}
}

// bench plan writes what bench run reads, {model} filled per cell.
func TestBenchPlanWritesPerModel(t *testing.T) {
	out := filepath.Join(t.TempDir(), "plans", "mlx.json")
	quiet(t)
	code := run(context.Background(), []string{"bench", "plan", "--out", out, "--model", "a,b", "--env", "HF_HOME=/tmp/hf",
		"--decode-runs", "2", "--", "python", "-m", "mlx_lm.server", "--model", "{model}", "--port", "{port}"})
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	b, _ := os.ReadFile(out)
	var p bench.Plan
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Cells) != 2 || p.Cells[1].Server.Argv[4] != "b" || p.Cells[0].Server.Env["HF_HOME"] != "/tmp/hf" || p.Phases.DecodeRuns != 2 {
		t.Errorf("plan %s", b)
	}
}
