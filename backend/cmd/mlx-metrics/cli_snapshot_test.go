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
