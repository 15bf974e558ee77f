// Package clock is the workspace's one abstraction of time, for code whose
// timing tests must control:
// the stream's throttle and keep-alive, the follower's backoff, the pace of
// rejection logs. Real is the system clock; Fake moves only when told to.
package clock

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Clock tells the time and makes tickers and waits.
type Clock interface {
	Now() time.Time
	NewTicker(d time.Duration) Ticker
	// Sleep waits d or until ctx ends, returning ctx.Err() in that case.
	Sleep(ctx context.Context, d time.Duration) error
	// After delivers the time once d has passed, as time.After does.
	After(d time.Duration) <-chan time.Time
	// AfterFunc calls f once d has passed, as time.AfterFunc does.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc. Stop cancels it and reports whether it did
// (false once f has started), as (*time.Timer).Stop does.
type Timer interface {
	Stop() bool
}

// Ticker delivers ticks on C until stopped.
type Ticker interface {
	C() <-chan time.Time
	Stop()
	// Reset restarts the ticker with period d: the next tick comes d from
	// now, and no tick due before the call is delivered after it.
	Reset(d time.Duration)
}

// SleepUntil waits on c until t, as Sleep does; at once (with ctx's error,
// if any) when t has passed.
func SleepUntil(ctx context.Context, c Clock, t time.Time) error {
	d := t.Sub(c.Now())
	if d <= 0 {
		return ctx.Err()
	}
	return c.Sleep(ctx, d)
}

// Real is the system clock.
type Real struct{}

func (Real) Now() time.Time { return time.Now() }

func (Real) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

func (Real) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }

func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time { return r.t.C }
func (r realTicker) Stop()               { r.t.Stop() }

// Reset relies on Go 1.23's timer channels: no stale tick after it returns.
func (r realTicker) Reset(d time.Duration) { r.t.Reset(d) }

// Fake is a manual clock for tests. Its tickers deliver on an unbuffered
// channel and Advance waits for each tick to be received (or the ticker to
// be stopped or reset), so when Advance returns the receiver has taken its
// tick, and has finished with every earlier one. Like a real
// ticker, a fake one that falls more than a period behind skips the ticks
// it missed.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	tickers []*fakeTicker
	sleeps  []*fakeSleep
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced when a ticker or sleep is added
	// offering counts the ticks Advance is offering a ticker's receiver
	// (its tests wait for one before they reset the ticker).
	offering int
}

// NewFake returns a fake clock reading now.
func NewFake(now time.Time) *Fake { return &Fake{now: now, changed: make(chan struct{})} }

func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

type fakeTicker struct {
	f      *Fake
	c      chan time.Time
	period time.Duration // guarded by f.mu, as are next and reset
	next   time.Time
	reset  chan struct{} // closed by Reset: a tick being delivered is dropped
	stop   chan struct{}
	once   sync.Once
}

func (t *fakeTicker) C() <-chan time.Time { return t.c }
func (t *fakeTicker) Stop()               { t.once.Do(func() { close(t.stop) }) }

func (t *fakeTicker) Reset(d time.Duration) {
	if d <= 0 {
		panic("clock: non-positive ticker period")
	}
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	t.period, t.next = d, t.f.now.Add(d)
	close(t.reset)
	t.reset = make(chan struct{})
}

func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive ticker period")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTicker{f: f, c: make(chan time.Time), period: d, next: f.now.Add(d), reset: make(chan struct{}), stop: make(chan struct{})}
	f.tickers = append(f.tickers, t)
	f.notify()
	return t
}

type fakeSleep struct {
	until time.Time
	done  chan struct{}
}

// Sleep returns once Advance has moved the clock d on, or ctx ends.
func (f *Fake) Sleep(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	s := &fakeSleep{until: f.now.Add(d), done: make(chan struct{})}
	if d <= 0 {
		f.mu.Unlock()
		return ctx.Err()
	}
	f.sleeps = append(f.sleeps, s)
	f.notify()
	f.mu.Unlock()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		f.mu.Lock()
		for i, o := range f.sleeps {
			if o == s {
				f.sleeps = append(f.sleeps[:i], f.sleeps[i+1:]...)
				break
			}
		}
		f.mu.Unlock()
		return ctx.Err()
	}
}

// After delivers the time once Advance has moved the clock d on; it counts
// as a sleeper until then.
func (f *Fake) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- f.Now()
		return ch
	}
	f.mu.Lock()
	s := &fakeSleep{until: f.now.Add(d), done: make(chan struct{})}
	f.sleeps = append(f.sleeps, s)
	f.notify()
	f.mu.Unlock()
	go func() {
		<-s.done
		ch <- f.Now()
	}()
	return ch
}

type fakeTimer struct {
	f     *Fake
	until time.Time
	fn    func()
}

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	for i, o := range t.f.timers {
		if o == t {
			t.f.timers = append(t.f.timers[:i], t.f.timers[i+1:]...)
			t.f.notify()
			return true
		}
	}
	return false
}

// AfterFunc calls f from the Advance that moves the clock d on (for d <= 0,
// the next Advance), before that Advance returns; it is not a sleeper, as
// no goroutine waits on it.
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{f: f, until: f.now.Add(d), fn: fn}
	f.timers = append(f.timers, t)
	f.notify()
	return t
}

func (f *Fake) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// Sleepers reports how many Sleep calls are waiting.
func (f *Fake) Sleepers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sleeps)
}

// WaitForSleepers blocks until at least n Sleep calls are waiting or ctx
// ends, so a test can Advance knowing the sleeper is in place.
func (f *Fake) WaitForSleepers(ctx context.Context, n int) error {
	return f.waitFor(ctx, n, func() int { return len(f.sleeps) })
}

// WaitForTimers blocks until at least n AfterFunc timers are pending or
// ctx ends, as WaitForSleepers does for Sleep calls.
func (f *Fake) WaitForTimers(ctx context.Context, n int) error {
	return f.waitFor(ctx, n, func() int { return len(f.timers) })
}

// waitFor blocks until count (read under the lock) is at least n or ctx
// ends.
func (f *Fake) waitFor(ctx context.Context, n int, count func() int) error {
	for {
		f.mu.Lock()
		k, ch := count(), f.changed
		f.mu.Unlock()
		if k >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Advance moves the clock d on, calling each due AfterFunc (in the order
// they fall due), delivering each due tick (waiting for it to be received)
// and ending each due Sleep.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	now := f.now
	type delivery struct {
		t     *fakeTicker
		reset chan struct{}
	}
	var due []delivery
	live := f.tickers[:0]
	for _, t := range f.tickers {
		select {
		case <-t.stop:
			continue // stopped: forget it
		default:
		}
		live = append(live, t)
		if !t.next.After(now) {
			due = append(due, delivery{t, t.reset})
			for !t.next.After(now) {
				t.next = t.next.Add(t.period)
			}
		}
	}
	f.tickers = live
	sleeps, woken := f.sleeps[:0], []*fakeSleep(nil)
	for _, s := range f.sleeps {
		if !s.until.After(now) {
			woken = append(woken, s)
		} else {
			sleeps = append(sleeps, s)
		}
	}
	f.sleeps = sleeps
	var fire []*fakeTimer
	timers := f.timers[:0]
	for _, t := range f.timers {
		if !t.until.After(now) {
			fire = append(fire, t)
		} else {
			timers = append(timers, t)
		}
	}
	f.timers = timers
	f.mu.Unlock()
	slices.SortStableFunc(fire, func(a, b *fakeTimer) int { return a.until.Compare(b.until) })
	for _, t := range fire {
		t.fn()
	}
	// Sleepers wake only after the due timers ran: a sleeper woken first
	// would race them (a count the timer was to write at the interval's
	// end written by the sleeper's next step instead).
	for _, s := range woken {
		close(s.done)
	}
	for _, d := range due {
		// A Stop or Reset since the tick fell due drops it. Checked before
		// the tick is offered: select picks at random among ready cases,
		// and the receiver that reset the ticker may already wait on it.
		select {
		case <-d.t.stop:
			continue
		case <-d.reset:
			continue
		default:
		}
		f.mu.Lock()
		f.offering++
		f.mu.Unlock()
		select {
		case d.t.c <- now:
		case <-d.t.stop:
		case <-d.reset: // reset meanwhile: this tick is stale
		}
		f.mu.Lock()
		f.offering--
		f.mu.Unlock()
	}
}
