package stream

import (
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
