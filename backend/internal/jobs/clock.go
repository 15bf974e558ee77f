package jobs

import "time"

// Clock is the time source of the service; tests inject one to drive the
// SIGKILL grace period without waiting for it.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
