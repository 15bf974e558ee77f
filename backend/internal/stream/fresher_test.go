package stream

import (
	"bufio"
	"net/http"
	"testing"
	"time"
)

// A client whose turn comes late (here: its previous write was stuck)
// writes the source's current version in place of the one its tick handed
// it, once that frame is refreshAge old and the source moved since; a
// younger frame, or an unmoved source, is written as handed.
func TestLateWriterSendsCurrentVersion(t *testing.T) {
	for _, tc := range []struct {
		name  string
		moved bool          // the source moves on after the tick
		after time.Duration // how long after the tick the client writes
		want  uint64
	}{
		{"moved, old enough", true, refreshAge, 3},
		{"moved, too young", true, refreshAge - time.Millisecond, 2},
		{"not moved", false, time.Second / 4, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarnessWith(t, harnessConfig{sndbuf: 4 << 10})
			h.src.pad = 64 << 10 // the opening write sticks until read
			conn := rawClient(t, h.addr)
			waitFor(t, "the opening write to stick", func() bool { return h.hub.Stats().Writing == 1 })
			h.src.mu.Lock()
			h.src.pad = 0 // the later frames are small: a stuck socket drains slowly
			h.src.mu.Unlock()

			h.src.set(2)
			h.advance(500 * time.Millisecond) // hands the client version 2
			if tc.moved {
				h.src.set(3)
			}
			h.clk.Advance(tc.after) // no tick: the next is an Interval on

			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			r := &reader{t: t, resp: resp, br: bufio.NewReader(resp.Body)}
			r.next() // retry
			if it := r.snapshot(); it.version != 1 {
				t.Fatalf("opening frame %+v, want version 1", it)
			}
			it := r.snapshot()
			if it.version != tc.want {
				t.Fatalf("second frame %+v, want version %d", it, tc.want)
			}
			if at := t0.Add(500*time.Millisecond + tc.after).UnixMilli(); tc.want == 3 && it.at != at {
				t.Errorf("refreshed frame stamped %d, want its write's time %d", it.at, at)
			}
			if got, want := h.src.encoded(), int(tc.want); got != want {
				t.Errorf("encoded %d times, want %d (once a version)", got, want)
			}

			// The client keeps its pace: the next version goes out at the next tick.
			h.src.set(4)
			h.advance(500*time.Millisecond - tc.after)
			if it := r.snapshot(); it.version != 4 {
				t.Fatalf("after the next tick got %+v, want version 4", it)
			}
		})
	}
}

// An encoding's wall time counts at most twice the cost before it: one the
// process was preempted in would otherwise hold refreshes off for long.
func TestEncodeCost(t *testing.T) {
	for _, tc := range []struct {
		prev, took, want time.Duration
	}{
		{0, 900 * time.Microsecond, 900 * time.Microsecond}, // the first
		{100 * time.Microsecond, 150 * time.Microsecond, 150 * time.Microsecond},
		{100 * time.Microsecond, 40 * time.Microsecond, 40 * time.Microsecond},
		{100 * time.Microsecond, 2 * time.Millisecond, 200 * time.Microsecond}, // preempted
	} {
		if got := encodeCost(tc.prev, tc.took); got != tc.want {
			t.Errorf("encodeCost(%v, %v) = %v, want %v", tc.prev, tc.took, got, tc.want)
		}
	}
}
