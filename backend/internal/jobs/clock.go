package jobs

import "time"

// Clock is the time source of the service: shared/clock's Real in use;
// tests inject one to drive the SIGKILL grace period without waiting for
// it. clock.Real and clock.Fake satisfy it.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}
