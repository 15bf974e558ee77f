// Package lease is the exclusive GPU lease. A `gpu: exclusive` job holds it
// alone; others wait in first-in-first-out order (Acquire) or are refused at
// once (TryAcquire), by their own choice. State reports it for the API.
package lease

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// ErrHeld is TryAcquire's answer while someone else holds the lease or waits
// for it (a newcomer never jumps the queue).
var ErrHeld = errors.New("the GPU is held by another job")

// ErrDuplicate is returned when a holder name already holds or waits.
var ErrDuplicate = errors.New("already holds or waits for the GPU")

// Lease is the GPU lease. The zero value is not usable; call New.
type Lease struct {
	device string
	clock  clock.Clock

	mu      sync.Mutex
	holder  string
	since   time.Time
	waiters []*waiter // FIFO; waiters[0] is next
}

type waiter struct {
	name  string
	ready chan struct{} // closed when the lease passes to this waiter
}

// Options configure a Lease. The zero value is the defaults.
type Options struct {
	// Clock stamps Since, when the lease was taken (clock.Real{} when nil).
	Clock clock.Clock
}

// New returns a free lease for device (the probe's word: a device name, or
// "no GPU found").
func New(device string, opts Options) *Lease {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	return &Lease{device: device, clock: opts.Clock}
}

// Release gives the lease back; calling it again does nothing.
type Release func()

// TryAcquire takes the lease for holder if it is free and nobody waits;
// otherwise it returns ErrHeld without waiting.
func (l *Lease) TryAcquire(holder string) (Release, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder == holder || l.waitingLocked(holder) >= 0 {
		return nil, ErrDuplicate
	}
	if l.holder != "" || len(l.waiters) > 0 {
		return nil, ErrHeld
	}
	l.grantLocked(holder)
	t := &Ticket{l: l, w: &waiter{name: holder, ready: make(chan struct{})}}
	close(t.w.ready)
	return t.Release, nil
}

// Acquire takes the lease for holder, waiting behind earlier callers until
// it is free or ctx ends (then it returns ctx's error and leaves the queue).
func (l *Lease) Acquire(ctx context.Context, holder string) (Release, error) {
	t, err := l.Enqueue(holder)
	if err != nil {
		return nil, err
	}
	select {
	case <-t.Ready():
		return t.Release, nil
	case <-ctx.Done():
		t.Release()
		return nil, ctx.Err()
	}
}

// Ticket is a place in the queue, taken at once so that callers that wait
// elsewhere (a job service) keep their order and position from the moment
// they ask.
type Ticket struct {
	l    *Lease
	w    *waiter
	once sync.Once
}

// Enqueue joins the queue for holder, or takes the lease at once when it is
// free and nobody waits. Ready tells when the lease is the ticket's.
func (l *Lease) Enqueue(holder string) (*Ticket, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder == holder || l.waitingLocked(holder) >= 0 {
		return nil, ErrDuplicate
	}
	t := &Ticket{l: l, w: &waiter{name: holder, ready: make(chan struct{})}}
	if l.holder == "" && len(l.waiters) == 0 {
		l.grantLocked(holder)
		close(t.w.ready)
		return t, nil
	}
	l.waiters = append(l.waiters, t.w)
	return t, nil
}

// Ready is closed once the ticket holds the lease.
func (t *Ticket) Ready() <-chan struct{} { return t.w.ready }

// Release leaves the queue, or gives the lease back to the next waiter if
// the ticket holds it. Calling it again does nothing.
func (t *Ticket) Release() {
	t.once.Do(func() {
		l := t.l
		l.mu.Lock()
		defer l.mu.Unlock()
		if i := l.waitingLocked(t.w.name); i >= 0 && l.waiters[i] == t.w {
			l.waiters = append(l.waiters[:i], l.waiters[i+1:]...)
			return
		}
		l.releaseLocked(t.w.name)
	})
}

// Position is holder's place in the queue: 0 when it holds the lease or is
// not waiting, 1 when it is next.
func (l *Lease) Position(holder string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waitingLocked(holder) + 1
}

// State is the lease as the API shows it.
func (l *Lease) State() bench.Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := bench.Lease{Held: l.holder != "", Holder: l.holder, Waiting: len(l.waiters), Device: l.device}
	if s.Held {
		s.Since = l.since.UnixMilli()
	}
	return s
}

// releaseLocked frees the lease if holder has it and hands it to the next
// waiter.
func (l *Lease) releaseLocked(holder string) {
	if l.holder != holder {
		return
	}
	l.holder = ""
	if len(l.waiters) == 0 {
		return
	}
	next := l.waiters[0]
	l.waiters = l.waiters[1:]
	l.grantLocked(next.name)
	close(next.ready)
}

func (l *Lease) grantLocked(holder string) {
	l.holder = holder
	l.since = l.clock.Now()
}

func (l *Lease) waitingLocked(holder string) int {
	for i, w := range l.waiters {
		if w.name == holder {
			return i
		}
	}
	return -1
}
