package engine

import (
	"context"
	"time"
)

// Clock is the engine's time: the workspace's clock.Real in use. The
// scheduler only reads it and sleeps to step deadlines, so a test clock
// that jumps to each deadline makes every figure exactly what the cost
// model says. clock.Real and clock.Fake (shared/clock) satisfy it.
type Clock interface {
	Now() time.Time
	// Sleep waits d, or returns early with ctx's error.
	Sleep(ctx context.Context, d time.Duration) error
}

// sleepUntil waits on c until t; at once when t has passed.
func sleepUntil(ctx context.Context, c Clock, t time.Time) error {
	d := t.Sub(c.Now())
	if d <= 0 {
		return ctx.Err()
	}
	return c.Sleep(ctx, d)
}
