package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/apierror"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// TestBenchListProblemsAndForget: `bench list` shows the readable runs and
// names the unreadable ones; `bench forget` deletes one, with the token.
func TestBenchListProblemsAndForget(t *testing.T) {
	var gotAuth, gotPath string
	writeJSON := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/metrics/history", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, bench.HistoryList{
			Entries:  []bench.HistoryEntry{{ID: "20261201T100000Z-aaaa", Profile: "smoke", Complete: true}},
			Problems: []bench.HistoryProblem{{ID: "20261201T090000Z-bbbb", Message: "unreadable entry: unexpected end of JSON input"}},
		})
	})
	mux.HandleFunc("DELETE /api/metrics/history/{id}", func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotPath = r.Header.Get("Authorization"), r.PathValue("id")
		if r.PathValue("id") != "20261201T090000Z-bbbb" {
			writeJSON(w, 404, apierror.New(404, "no finished run in history"))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	server := "--server=" + srv.URL
	tests := []struct {
		name     string
		cmd      func(context.Context, []string, cliEnv) error
		args     []string
		code     int
		stdout   []string
		stderr   []string
		wantAuth string
	}{
		{"list", benchListCmd, []string{server}, 0, []string{"20261201T100000Z-aaaa"},
			[]string{"skipped run 20261201T090000Z-bbbb: unreadable entry", "bench forget ID"}, ""},
		{"forget", benchForgetCmd, []string{server, "--token=s3cret", "20261201T090000Z-bbbb"}, 0,
			[]string{"forgot run 20261201T090000Z-bbbb"}, nil, "Bearer s3cret"},
		{"forget unknown", benchForgetCmd, []string{server, "nope"}, 1, nil, nil, ""},
		{"forget no id", benchForgetCmd, []string{server}, 2, nil, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotAuth = ""
			env, out, errb := testEnv()
			err := tt.cmd(context.Background(), tt.args, env)
			if got := exitCode(err); got != tt.code {
				t.Fatalf("exit %d (%v), want %d", got, err, tt.code)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(out.String(), s) {
					t.Errorf("stdout %q lacks %q", out, s)
				}
			}
			for _, s := range tt.stderr {
				if !strings.Contains(errb.String(), s) {
					t.Errorf("stderr %q lacks %q", errb, s)
				}
			}
			if tt.name == "forget" && (gotAuth != tt.wantAuth || gotPath != "20261201T090000Z-bbbb") {
				t.Errorf("DELETE auth %q path %q", gotAuth, gotPath)
			}
		})
	}
}

// TestBenchPrintsEscaped: what a run's record or the history says (an
// imported run.json, a machine's names, a runner's problems) reaches the
// terminal escaped, so it cannot rewrite the operator's screen.
func TestBenchPrintsEscaped(t *testing.T) {
	const evil = "x\x1b]0;pwned\x07\x1b[2J\u009b31m"
	e := bench.HistoryEntry{
		ID: "20261201T100000Z-aaaa", Profile: "smoke" + evil, Scope: bench.ScopeScoped + evil,
		Machine:      bench.Machine{Chip: "chip" + evil, OS: "os" + evil, GPU: "gpu" + evil},
		RunDirectory: "/runs/a" + evil,
		Problems:     []string{"server exited" + evil},
		Cells: []bench.CompactCell{{Key: "m/tree/a" + evil, Kind: bench.KindTree, Status: bench.CellFailed + evil},
			{Key: "m/reference/b" + evil, Kind: bench.KindReference, Status: bench.CellFailed}},
	}
	var show, list, problems, compare strings.Builder
	if err := printBenchEntry(&show, e); err != nil {
		t.Fatal(err)
	}
	printBenchList(&list, []bench.HistoryEntry{e})
	printProblems(&problems, []bench.HistoryProblem{{ID: "20261201T090000Z-bbbb" + evil, Message: "unreadable entry: " + evil}})
	printComparison(&compare, e, e, 0.05, 0)
	for name, out := range map[string]string{"bench show": show.String(), "bench list": list.String(),
		"skipped runs": problems.String(), "bench compare": compare.String()} {
		if strings.ContainsAny(out, "\x1b\x07\u009b") {
			t.Errorf("%s printed a control sequence: %q", name, out)
		}
		if !strings.Contains(out, `\x1b]0;pwned\a`) {
			t.Errorf("%s lost the escaped text: %q", name, out)
		}
	}
}

// bench show sets each candidate beside its model's reference, figure by
// figure, with the compare rule's verdicts.
func TestBenchShowHeadToHead(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	e := bench.HistoryEntry{ID: "20261201T100000Z-aaaa", Cells: []bench.CompactCell{
		{Key: "m/tree/parallel", Model: "m", Kind: bench.KindTree, DecodeTokensPerSecond: f(150), TTFTColdMs: f(100),
			Spread: map[string]bench.Range{"decode": {Min: 148, Max: 152}}},
		{Key: "m/reference/serial", Model: "m", Kind: bench.KindReference, DecodeTokensPerSecond: f(100), TTFTColdMs: f(101),
			Spread: map[string]bench.Range{"decode": {Min: 99, Max: 101}}},
		{Key: "n/tree/alone", Model: "n", Kind: bench.KindTree, DecodeTokensPerSecond: f(10)},
	}}
	var out strings.Builder
	if err := printBenchEntry(&out, e); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"head to head: m/tree/parallel against m/reference/serial: FASTER",
		"DECODE tok/s  150.0      100.0      1.50                 faster", "COLD TTFT ms  100.0      101.0      0.99                 same"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("bench show lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Count(out.String(), "head to head") != 1 {
		t.Errorf("want one pair (n has no reference):\n%s", out.String())
	}
}

// --threshold takes a percent, as --fail-on-regression does; a value below
// 1 is the old fraction, kept working with a note.
func TestCompareThresholdUnit(t *testing.T) {
	real := realBench(t, runA, runB)
	tests := []struct {
		threshold string
		header    string // on stdout
		note      string // on stderr; "" for none
	}{
		{"5", "(threshold 5.0%)", ""},
		{"12.5", "(threshold 12.5%)", ""},
		{"0", "(threshold 0.0%)", ""},
		{"0.05", "(threshold 5.0%)", "note: --threshold 0.05 read as a fraction (5%); it takes a percent now, as --fail-on-regression: write --threshold 5"},
	}
	for _, tt := range tests {
		t.Run(tt.threshold, func(t *testing.T) {
			env, out, errOut := testEnv()
			if err := benchCompareCmd(context.Background(), []string{real, "--threshold", tt.threshold, runA.ID, runB.ID}, env); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tt.header) {
				t.Errorf("stdout lacks %q:\n%s", tt.header, out)
			}
			if got := strings.TrimSpace(errOut.String()); got != tt.note {
				t.Errorf("stderr %q, want %q", got, tt.note)
			}
		})
	}
}
