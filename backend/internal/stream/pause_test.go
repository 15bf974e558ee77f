package stream

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// A fan-out passes turns on until yieldEvery after it began; then the turn
// is held, and every turn after it, until the pipe's reader ends the pause
// and passes on every turn held.
func TestPauseHoldsTurns(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	clk := clock.NewFake(t0)
	h := &Hub{opts: Options{Clock: clk}.withDefaults(), pause: &pause{r: r, w: w}}
	cs := make([]*client, 6)
	for i := range cs {
		cs[i] = &client{wake: make(chan struct{}, 1)}
		h.enqueue(cs[i])
	}
	h.beginFanOut(clk.Now())
	for _, step := range []struct {
		name    string
		advance time.Duration
		endNow  bool // the pipe's reader ends the pause before the turn
		woken   []int
		held    int
		pauses  uint64
	}{
		{"within yieldEvery", yieldEvery - time.Nanosecond, false, []int{0}, 0, 0},
		{"yieldEvery on", time.Nanosecond, false, nil, 1, 1},
		{"paused", time.Hour, false, nil, 2, 1},
		{"pause ended", 0, true, []int{1, 2, 3}, 0, 1}, // the two held, then this turn
		{"a stretch on", yieldEvery, false, nil, 1, 2},
	} {
		clk.Advance(step.advance)
		if step.endNow {
			var b [2]byte
			if n, err := r.Read(b[:]); n != 1 || err != nil {
				t.Fatalf("%s: pipe read %d bytes, %v; want the one byte of the pause", step.name, n, err)
			}
			h.endPause()
		}
		h.passTurn()
		h.wakeMu.Lock()
		held := h.pause.held
		h.wakeMu.Unlock()
		if got := takeWakes(cs); !slices.Equal(got, step.woken) || held != step.held || h.pauses.Load() != step.pauses {
			t.Fatalf("%s: woke %v with %d turns held, %d pauses; want %v, %d, %d",
				step.name, got, held, h.pauses.Load(), step.woken, step.held, step.pauses)
		}
	}
}
