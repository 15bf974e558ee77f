package stream

import (
	"slices"
	"testing"
	"time"
)

// A write may not begin once the client is cut off or the hub closes, and
// the two say which: only a closing hub ends a stream with its closing
// chunk; a client cut off (its last write timed out, even one that then
// completed) is broken off.
func TestBeginRefuses(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	tests := []struct {
		name  string
		setup func(c *client)
		want  error
	}{
		{"open", func(*client) {}, nil},
		{"closing", func(c *client) { c.close(t0.Add(time.Second)) }, errClosing},
		{"cut off after its write completed", func(c *client) {
			c.begin(nil, 10, t0)
			c.expire(t0.Add(time.Minute), time.Second) // before the writer's end()
			c.end()
		}, errCutOff},
		{"cut off and closing", func(c *client) {
			c.begin(nil, 10, t0)
			c.expire(t0.Add(time.Minute), time.Second)
			c.close(t0.Add(time.Second))
		}, errCutOff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &client{wake: make(chan struct{}, 1)}
			tt.setup(c)
			if err := c.begin(nil, 10, t0.Add(2*time.Minute)); err != tt.want {
				t.Fatalf("begin: %v, want %v", err, tt.want)
			}
		})
	}
}

// The wake queue wakes n clients at a time, each once however often it
// was queued; one in a write is woken but not counted (it passes on only
// when its write ends), one already woken is not counted (it passes on
// once, for that wake-up), and one that left is neither woken nor counted.
func TestWakeQueue(t *testing.T) {
	h := &Hub{}
	cs := make([]*client, 9)
	for i := range cs {
		cs[i] = &client{wake: make(chan struct{}, 1)}
		h.enqueue(cs[i])
	}
	h.enqueue(cs[0]) // queued already
	cs[2].begin(nil, 10, time.Time{})
	h.wakeMu.Lock()
	cs[3].gone = true
	h.wakeMu.Unlock()

	woken := func() []int { return takeWakes(cs) }
	for i, step := range []struct {
		n    int
		want []int
		left int
	}{
		{2, []int{0, 1}, 7},
		{2, []int{2, 4, 5, 6}, 2}, // 2 is in a write, 3 left, 5 was woken already
		{5, []int{7, 8}, 0},
		{1, nil, 0},
	} {
		if i == 1 {
			cs[5].wake <- struct{}{} // woken before, not yet running
		}
		h.passOn(step.n)
		if got := woken(); !slices.Equal(got, step.want) || len(h.wakeQ) != step.left {
			t.Fatalf("passOn(%d) woke %v with %d left, want %v with %d", step.n, got, len(h.wakeQ), step.want, step.left)
		}
	}
	h.enqueue(cs[0]) // popped: may queue again
	if h.passOn(1); !slices.Equal(woken(), []int{0}) {
		t.Fatal("a client woken once was not queued again")
	}
}

// takeWakes returns the indexes of the clients of cs with a wake-up
// pending, taking the wake-ups.
func takeWakes(cs []*client) (got []int) {
	for i, c := range cs {
		select {
		case <-c.wake:
			got = append(got, i)
		default:
		}
	}
	return got
}
