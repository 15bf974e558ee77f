// Package bus fans serving events out to in-process subscribers.
//
// Every event source (POST /events, the --events-url follower, --replay, the
// proxy, the reference engine) publishes here, and every consumer (the live
// store, the Prometheus exporter, …) subscribes. A producer must never wait
// for a consumer: Publish only appends to each subscriber's bounded queue,
// and a subscriber that falls behind loses its oldest events, counted,
// rather than slowing the host or growing memory without bound.
package bus

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// DefaultQueue is the queue length Subscribe uses for queue <= 0.
const DefaultQueue = 4096

// SubscriberStats counts what happened to one subscriber's events.
type SubscriberStats struct {
	Name      string `json:"name"`
	Delivered uint64 `json:"delivered"` // handled without panicking
	Dropped   uint64 `json:"dropped"`   // lost to a full queue (oldest first)
	Failed    uint64 `json:"failed"`    // the handler panicked; the event was skipped
	Queued    int    `json:"queued"`    // waiting now
	// LastFailure is the latest panic value, for finding the faulty handler.
	LastFailure string `json:"lastFailure,omitempty"`
}

// Bus is an event fan-out. The zero value is not usable; call New.
type Bus struct {
	mu   sync.Mutex                    // serialises changes to subs
	subs atomic.Pointer[[]*subscriber] // copy-on-write, read lock-free by Publish
}

// New returns an empty bus.
func New() *Bus {
	b := &Bus{}
	b.subs.Store(&[]*subscriber{})
	return b
}

// Publish hands ev to every subscriber's queue. It never blocks on a
// subscriber: a full queue drops its oldest event instead.
func (b *Bus) Publish(ev events.Event) {
	for _, s := range *b.subs.Load() {
		s.push(ev)
	}
}

// Subscribe runs handler, on its own goroutine, for every event published
// after it returns, in publish order. queue bounds the events waiting for
// the handler. A handler that panics is recovered; the event is counted as
// failed and skipped. cancel stops delivery and waits for a handler call in
// progress to return; events still queued are discarded. cancel is safe to
// call more than once.
func (b *Bus) Subscribe(name string, queue int, handler func(events.Event)) (cancel func()) {
	if queue <= 0 {
		queue = DefaultQueue
	}
	s := &subscriber{
		name:    name,
		handler: handler,
		ring:    make([]events.Event, queue),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		exited:  make(chan struct{}),
	}
	b.mu.Lock()
	old := *b.subs.Load()
	next := make([]*subscriber, len(old), len(old)+1)
	copy(next, old)
	next = append(next, s)
	b.subs.Store(&next)
	b.mu.Unlock()

	go s.run()

	var once sync.Once
	return func() {
		once.Do(func() {
			b.remove(s)
			close(s.done)
			<-s.exited
		})
	}
}

func (b *Bus) remove(s *subscriber) {
	b.mu.Lock()
	defer b.mu.Unlock()
	old := *b.subs.Load()
	next := make([]*subscriber, 0, len(old))
	for _, o := range old {
		if o != s {
			next = append(next, o)
		}
	}
	b.subs.Store(&next)
}

// Stats reports every current subscriber, in subscription order.
func (b *Bus) Stats() []SubscriberStats {
	subs := *b.subs.Load()
	out := make([]SubscriberStats, 0, len(subs))
	for _, s := range subs {
		s.mu.Lock()
		queued := s.n
		s.mu.Unlock()
		last, _ := s.lastFailure.Load().(string)
		out = append(out, SubscriberStats{
			LastFailure: last,
			Name:        s.name,
			Delivered:   s.delivered.Load(),
			Dropped:     s.dropped.Load(),
			Failed:      s.failed.Load(),
			Queued:      queued,
		})
	}
	return out
}

// Flush waits until every subscriber has handled (or dropped) each event
// published before the call. Replay uses it to know a file is fully reduced,
// and tests to synchronise without sleeping. A handler that never returns
// makes Flush wait forever, as it would make the subscriber stall; so does
// calling Flush from inside a handler.
func (b *Bus) Flush() {
	for _, s := range *b.subs.Load() {
		s.flush()
	}
}

// subscriber is one consumer: a ring buffer of pending events and the
// goroutine that drains it.
type subscriber struct {
	name    string
	handler func(events.Event)

	mu      sync.Mutex
	ring    []events.Event
	head, n int           // ring[head] is the oldest of n pending events
	pushed  uint64        // events ever accepted into the ring
	taken   uint64        // events ever removed from it, handled or dropped
	idle    *sync.Cond    // broadcast on progress while Flush waits
	waiters int           // Flush callers waiting on idle
	wake    chan struct{} // one pending wake-up is enough
	done    chan struct{}
	exited  chan struct{}

	delivered, dropped, failed atomic.Uint64
	lastFailure                atomic.Value // string: the latest panic value
}

func (s *subscriber) push(ev events.Event) {
	s.mu.Lock()
	if s.n == len(s.ring) {
		// Full: the oldest event gives way to the newest.
		s.ring[s.head] = events.Event{}
		s.head = (s.head + 1) % len(s.ring)
		s.n--
		s.taken++
		s.dropped.Add(1)
	}
	s.ring[(s.head+s.n)%len(s.ring)] = ev
	s.n++
	s.pushed++
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// pop removes the oldest pending event.
func (s *subscriber) pop() (events.Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == 0 {
		return events.Event{}, false
	}
	ev := s.ring[s.head]
	s.ring[s.head] = events.Event{} // let the payload be collected
	s.head = (s.head + 1) % len(s.ring)
	s.n--
	return ev, true
}

// finish marks one popped event as dealt with, waking Flush callers.
func (s *subscriber) finish() {
	s.mu.Lock()
	s.taken++
	if s.waiters > 0 {
		s.idle.Broadcast()
	}
	s.mu.Unlock()
}

func (s *subscriber) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idle == nil {
		s.idle = sync.NewCond(&s.mu)
	}
	target := s.pushed
	for s.taken < target {
		select {
		case <-s.exited:
			return // cancelled: nothing more will be handled
		default:
		}
		s.waiters++
		s.idle.Wait()
		s.waiters--
	}
}

func (s *subscriber) run() {
	defer func() {
		s.mu.Lock()
		// Discard what is left so Flush callers are released.
		s.taken += uint64(s.n)
		s.n = 0
		close(s.exited)
		if s.idle != nil {
			s.idle.Broadcast()
		}
		s.mu.Unlock()
	}()
	for {
		select {
		case <-s.done:
			return
		case <-s.wake:
		}
		for {
			select {
			case <-s.done:
				return
			default:
			}
			ev, ok := s.pop()
			if !ok {
				break
			}
			s.handle(ev)
			s.finish()
		}
	}
}

func (s *subscriber) handle(ev events.Event) {
	defer func() {
		if r := recover(); r != nil {
			s.failed.Add(1)
			s.lastFailure.Store(fmt.Sprint(r))
		}
	}()
	s.handler(ev)
	s.delivered.Add(1)
}
