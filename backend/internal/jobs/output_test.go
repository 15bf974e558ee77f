package jobs

import (
	"math"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

func TestPhaseAndStepLines(t *testing.T) {
	for _, tc := range []struct {
		line string
		kind int
		text string
		done float64
	}{
		{"phase decode (attempt 1)", linePhase, "decode", 0},
		{"phase long-context (attempt 2)", linePhase, "long-context", 0},
		{"decode 3/5: 41.2 tok/s (192 tokens)", lineStep, "decode 3/5: 41.2 tok/s (192 tokens)", 0.6},
		{"warm TTFT 1/3: 38.0 ms (768 of 812 prompt tokens cached)", lineStep, "", 1.0 / 3},
		{"cold TTFT 3/3: 420.0 ms, prefill 2400 tok/s (1024 prompt tokens)", lineStep, "", 1},
		{"decode 6/5: nonsense", lineLog, "", 0},
		{"load point 3/8: point 3.1 at 4 req/s poisson: 200/200 ok", lineStep, "load point 3/8: point 3.1 at 4 req/s poisson: 200/200 ok", 0.375},
		{"phase load (attempt 1)", linePhase, "load", 0},
		{"phase decode", lineLog, "", 0},
		{"ready after 400 ms", lineLog, "", 0},
	} {
		kind, text := parseLine(tc.line)
		if kind != tc.kind || tc.text != "" && text != tc.text {
			t.Errorf("parseLine(%q) = %d %q, want %d %q", tc.line, kind, text, tc.kind, tc.text)
		}
		if kind == lineStep {
			if f, _ := step(tc.line); f != tc.done {
				t.Errorf("step(%q) = %v, want %v", tc.line, f, tc.done)
			}
		}
	}
}

// Progress moves inside a cell: each phase the runner starts, and each run
// of it done, moves the job's progress, stage and message.
func TestProgressWithinACell(t *testing.T) {
	j := jobState{Job: bench.Job{Status: bench.StatusRunning}, cells: 2, phases: planPhases(bench.Plan{}), phase: -1}
	steps := []struct {
		line     string
		progress float64
		stage    string
	}{
		{"=== m/tree/c0 ===", 0, "cell 1/2"},
		{"phase decode (attempt 1)", 0, "cell 1/2 · decode (phase 1/5)"},
		{"decode 1/5: 40.0 tok/s (192 tokens)", 0.2 / 5 / 2, "cell 1/2 · decode (phase 1/5)"},
		{"decode 5/5: 41.0 tok/s (192 tokens)", 1.0 / 5 / 2, "cell 1/2 · decode (phase 1/5)"},
		{"phase cold-ttft (attempt 1)", 1.0 / 5 / 2, "cell 1/2 · cold-ttft (phase 2/5)"},
		{"phase cold-ttft (attempt 2)", 1.0 / 5 / 2, "cell 1/2 · cold-ttft (phase 2/5)"}, // a retry stays in place
		{"phase concurrent (attempt 1)", 4.0 / 5 / 2, "cell 1/2 · concurrent (phase 5/5)"},
		{"=== m/tree/c1 ===", 0.5, "cell 2/2"},
		{"phase warm-ttft (attempt 1)", 0.5 + 2.0/5/2, "cell 2/2 · warm-ttft (phase 3/5)"},
	}
	for _, st := range steps {
		j, _ = transition(j, time.Time{}, runnerLine(st.line, true))
		if math.Abs(j.Progress-st.progress) > 1e-9 || j.Stage != st.stage {
			t.Errorf("after %q: progress %v stage %q, want %v %q", st.line, j.Progress, j.Stage, st.progress, st.stage)
		}
	}
	if j.Message != "m/tree/c1: phase warm-ttft (attempt 1)" || len(j.LogTail) == 0 {
		t.Errorf("message %q, log %q", j.Message, j.LogTail)
	}
}
