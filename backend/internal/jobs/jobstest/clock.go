package jobstest

import (
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// Clock is a clock.Clock whose After timers (the SIGKILL grace period)
// fire only when the test says: each After's channel arrives on Armed, in
// order, and the test sends on it to end that grace period.
type Clock struct {
	clock.Clock
	Armed chan chan time.Time
}

// NewClock wraps base (its time, tickers and sleeps) with armed timers.
func NewClock(base clock.Clock) *Clock {
	return &Clock{Clock: base, Armed: make(chan chan time.Time, 16)}
}

// After hands its channel to the test on Armed.
func (c *Clock) After(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.Armed <- ch
	return ch
}
