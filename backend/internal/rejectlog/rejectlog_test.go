package rejectlog

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// The first rejection is logged at once; later ones are counted and
// logged at most once an interval: when the interval ends (no rejection
// needed to trigger it), at once after a quiet interval, and on Flush;
// after Reset the next is a first again. Words change only the wording.
func TestPacing(t *testing.T) {
	type step struct {
		advance time.Duration
		rejects int
		flush   bool
		reset   bool     // after the rejects and any flush
		lines   []string // the lines this step writes, each by a part of it
	}
	first := "src: rejected an event: bad 1 (further rejections are counted, logged at most every 1 min 00 s)"
	tests := []struct {
		name  string
		words Words
		steps []step
	}{
		{"a burst, then silence: the timer writes the count", Words{}, []step{
			{0, 1, false, false, []string{first}},
			{time.Second, 50, false, false, nil},
			{58 * time.Second, 0, false, false, nil},
			{time.Second, 0, false, false, []string{"src: 50 more events rejected in the last 1 min 00 s; latest: bad 51"}},
			{time.Hour, 0, true, false, nil}, // nothing pending: nothing more
		}},
		{"counted within the interval, logged at its end, paced again after", Words{}, []step{
			{0, 1, false, false, []string{first}},
			{30 * time.Second, 2, false, false, nil},
			{30 * time.Second, 0, false, false, []string{"2 more events rejected in the last 1 min 00 s; latest: bad 3"}},
			{time.Second, 1, false, false, nil}, // the interval starts at the last line
			{59 * time.Second, 0, false, false, []string{"1 more event rejected in the last 1 min 00 s; latest: bad 4"}},
		}},
		{"after a quiet interval, at once", Words{}, []step{
			{0, 1, false, false, []string{first}},
			{5 * time.Minute, 1, false, false, []string{"1 more event rejected in the last 5 min 00 s; latest: bad 2"}},
			{time.Second, 1, false, false, nil},
		}},
		{"the source stops: Flush writes what is pending, once", Words{}, []step{
			{0, 3, false, false, []string{first}},
			{10 * time.Second, 0, true, false, []string{"2 more events rejected in the last 10.0 s; latest: bad 3"}},
			{time.Hour, 0, true, false, nil}, // the timer was stopped
		}},
		{"Flush before any rejection writes nothing", Words{}, []step{
			{0, 0, true, false, nil},
			{0, 1, false, false, []string{first}},
		}},
		{"Reset writes what is pending, and the next is a first again", Words{}, []step{
			{0, 3, false, false, []string{first}},
			{10 * time.Second, 0, false, true, []string{"2 more events rejected in the last 10.0 s; latest: bad 3"}},
			{time.Second, 1, false, false, []string{"src: rejected an event: bad 4 (further"}},
			{time.Second, 1, false, false, nil},
			{time.Hour, 0, false, false, []string{"1 more event rejected in the last 1 min 00 s; latest: bad 5"}},
		}},
		{"other words: a host's failed attempts", Words{First: "cannot connect", Further: "failures", One: "more failed attempt", Many: "more failed attempts"}, []step{
			{0, 1, false, false, []string{"src: cannot connect: bad 1 (further failures are counted, logged at most every 1 min 00 s)"}},
			{30 * time.Second, 4, false, false, nil},
			{30 * time.Second, 0, false, false, []string{"src: 4 more failed attempts in the last 1 min 00 s; latest: bad 5"}},
			{0, 0, false, true, nil},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewFake(time.UnixMilli(1_764_690_000_000))
			var lines []string
			l := New("src", Options{Clock: clk, Words: tt.words, Logger: logging.Func(func(_ slog.Level, msg string) { lines = append(lines, msg) })})
			n := 0
			for i, s := range tt.steps {
				lines = nil
				clk.Advance(s.advance)
				for range s.rejects {
					n++
					l.Reject(fmt.Sprintf("bad %d", n))
				}
				if s.flush {
					l.Flush()
				}
				if s.reset {
					l.Reset()
				}
				if len(lines) != len(s.lines) {
					t.Fatalf("step %d: lines %q, want %d", i, lines, len(s.lines))
				}
				for j, want := range s.lines {
					if !strings.Contains(lines[j], want) {
						t.Errorf("step %d: line %q, want it to hold %q", i, lines[j], want)
					}
				}
			}
		})
	}
}

// A real clock's timer writes the count by itself.
func TestRealTimerFlushes(t *testing.T) {
	got := make(chan string, 2)
	l := New("src", Options{Every: time.Millisecond, Logger: logging.Func(func(_ slog.Level, msg string) { got <- msg })})
	l.Reject("a")
	l.Reject("b")
	<-got
	if line := <-got; !strings.Contains(line, "1 more event rejected") {
		t.Errorf("line %q", line)
	}
}
