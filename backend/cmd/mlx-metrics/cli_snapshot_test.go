package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// A model name a producer chose cannot drive the operator's terminal.
func TestSnapshotEscapesNames(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"mlx-community/Qwen3-4B-4bit", "mlx-community/Qwen3-4B-4bit"},
		{"évalué-模型", "évalué-模型"},
		{"evil\x1b]0;pwned\x07\x1b[2J", `evil\x1b]0;pwned\a\x1b[2J`},
		{"tab\tand\nnewline", `tab\tand\nnewline`},
		{"c1\u009bcontrol", `c1\u009bcontrol`},
		{"bidi\u202eexe.live", `bidi\u202eexe.live`},
	} {
		if got := termSafe(tc.name); got != tc.want {
			t.Errorf("termSafe(%q) = %q, want %q", tc.name, got, tc.want)
		}
		var out bytes.Buffer
		s := snapshot.Snapshot{
			Models:     []snapshot.Model{{Model: tc.name, State: "resident"}},
			Schedulers: []snapshot.Scheduler{{SchedulerSample: events.SchedulerSample{Model: tc.name}}},
			Caches:     []snapshot.Cache{{Model: tc.name, KV: &snapshot.KVCache{Bytes: 1}}},
		}
		if err := printSnapshot(&out, s); err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(out.String(), "\x1b\x07\u009b") || strings.Count(out.String(), tc.want) != 3 {
			t.Errorf("printed %q", out.String())
		}
	}
}

// A message from a backend is printed safe and cut, whatever its size.
func TestTermLine(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    string // prefix
		maxSize int
	}{
		{"no such run", "no such run", 20},
		{"\x1b[2J\x1b]0;title\x07gone", `\x1b[2J\x1b]0;title\agone`, 40},
		{strings.Repeat("é", 5000), "éé", maxTermLine + len("…")},
	} {
		got := termLine(tc.in)
		if !strings.HasPrefix(got, tc.want) || len(got) > tc.maxSize || !utf8.ValidString(got) {
			t.Errorf("termLine(%.20q) = %.40q (%d bytes)", tc.in, got, len(got))
		}
	}
}

// Times are shown by their slow (high) tail and rates by theirs (low), as
// the panel's Requests view shows them: a decode rate's p95 is its fast
// tail, which no one waits on.
func TestSnapshotTails(t *testing.T) {
	var out bytes.Buffer
	s := snapshot.Snapshot{}
	s.Requests.Window.TTFTMs = &snapshot.Distribution{P50: 10, P95: 20, P99: 30, Max: 40, Mean: 12}
	s.Requests.Window.DecodeTokensPerSecond = &snapshot.Distribution{P50: 50, P95: 70, P99: 80, Max: 90, Min: 5, P1: 8, P5: 20, Mean: 48}
	if err := printSnapshot(&out, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"TIMING (ms)  P50   P95   P99   MAX   MEAN",
		"ttft         10.0  20.0  30.0  40.0  12.0",
		"RATE (tok/s)  P50   P5    P1   MIN  MEAN",
		"decode        50.0  20.0  8.0  5.0  48.0",
		"prefill       -     -     -    -    -",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
