package loadgen

import (
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

type stampAt int64

func (s stampAt) LastArrival() int64 { return int64(s) }

// A stamp is believed only when it is before now and not long before; the
// time it gives keeps now's monotonic reading.
func TestArrivedAt(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name  string
		stamp int64
		want  time.Duration // from now
		ok    bool
	}{
		{"none", 0, 0, false},
		{"5 ms before", now.Add(-5 * time.Millisecond).UnixNano(), -5 * time.Millisecond, true},
		{"now", now.UnixNano(), 0, true},
		{"after now", now.Add(time.Millisecond).UnixNano(), 0, false},
		{"too old", now.Add(-maxArrivalLag - time.Second).UnixNano(), 0, false},
		{"negative", -1, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at, ok := arrivedAt(now, stampAt(tt.stamp))
			if ok != tt.ok || at.Sub(now) != tt.want {
				t.Errorf("arrivedAt = now%+v, %v; want now%+v, %v", at.Sub(now), ok, tt.want, tt.ok)
			}
			if !strings.Contains(at.String(), " m=") {
				t.Error("the result lost now's monotonic reading")
			}
		})
	}
}

// untilStamped calls try until it reports a stamped read, for at most 10 s.
// The kernel turns receive stamps on for every socket a moment after the
// first asks (deferred work, which signals nothing): on a busy machine that
// moment outlasts many quick tries, so the tries are spaced out by a
// millisecond after the first few.
func untilStamped(t *testing.T, try func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		if try() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		if i >= 10 {
			time.Sleep(time.Millisecond)
		}
	}
}

// stampSeq gives one arrival stamp per read, in turn, and moves the clock
// on by step after each.
type stampSeq struct {
	stamps []int64
	clk    *clock.Fake
	step   time.Duration
}

func (s *stampSeq) LastArrival() int64 {
	v := s.stamps[0]
	s.stamps = s.stamps[1:]
	s.clk.Advance(s.step)
	return v
}

// A request whose first token came unstamped is timed on read times
// throughout: a later chunk's arrival stamp can be earlier than a late
// read of the first (a busy client), which made the decode rate
// unmeasurable (TestBenchRunSummaryAndExit, 1 run in 30 under load).
func TestOneClockPerRequest(t *testing.T) {
	t0 := time.Unix(1_764_690_000, 0)
	tests := []struct {
		name     string
		stamps   []int64 // per chunk: 0 none
		stamped  bool
		wantRate float64
	}{
		// First read late (t0+200ms, unstamped); the second's stamp says
		// it arrived at t0+140ms, before that read: read times are used.
		{"first unstamped", []int64{0, t0.Add(140 * time.Millisecond).UnixNano()}, false, 1 / 0.010},
		{"both stamped", []int64{t0.Add(150 * time.Millisecond).UnixNano(), t0.Add(190 * time.Millisecond).UnixNano()}, true, 1 / 0.040},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewFake(t0.Add(200 * time.Millisecond))
			c := &Client{clock: clk}
			// One line a chunk, so each read of a line takes the next stamp.
			body := strings.NewReader("data: {\"id\":\"x\",\"choices\":[{\"text\":\"a\"}]}\n" +
				"data: {\"id\":\"x\",\"choices\":[{\"text\":\"b\"}]}\ndata: [DONE]\n")
			var res Result
			res.CompletionTokens = 2
			if err := c.read(body, &res, &stampSeq{stamps: append(tt.stamps, 0, 0, 0, 0), clk: clk, step: 10 * time.Millisecond}); err != nil {
				t.Fatal(err)
			}
			if res.Stamped != tt.stamped {
				t.Errorf("Stamped = %v, want %v", res.Stamped, tt.stamped)
			}
			if got := res.DecodeTokensPerSecond(); got < tt.wantRate*0.999 || got > tt.wantRate*1.001 {
				t.Errorf("decode rate %v, want %v (first %v, last %v)", got, tt.wantRate, res.FirstToken.Sub(t0), res.LastToken.Sub(t0))
			}
		})
	}
}
