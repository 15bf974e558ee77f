package ingest

import (
	"hash/maphash"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// identity is what makes an event the same event when a host sends it
// again: its type, at and model, and what tells apart two events of one
// model in one millisecond (a request's id, a cache's kind, a load's phase,
// an unload's reason). It is used rather than SSE ids, which a host may
// number per connection or anew after a restart: an id seen before would
// then drop a new event, while a replayed event keeps its identity.
func identity(ev events.Event) string {
	var model, sub string
	switch p := ev.Payload.(type) {
	case *events.ModelLoad:
		model, sub = p.Model, p.Phase
	case *events.ModelUnload:
		model, sub = p.Model, p.Reason
	case *events.ModelMemory:
		model = p.Model
	case *events.RequestFinished:
		model, sub = p.Model, p.RequestID
	case *events.SchedulerSample:
		model = p.Model
	case *events.CacheSample:
		model, sub = p.Model, p.Cache
	default:
		return "" // not reduced: nothing to guard
	}
	return string(ev.Type) + "\x00" + strconv.FormatInt(ev.At, 10) + "\x00" + model + "\x00" + sub
}

// seenSet remembers the hashes of the last n identities. A 64-bit hash
// keeps the memory at 16 bytes an event whatever the names' lengths; two
// of 65,536 events colliding is a one-in-2^33 chance.
type seenSet struct {
	seed    maphash.Seed
	mu      sync.Mutex
	set     map[uint64]struct{}
	ring    []uint64
	next    int
	dropped atomic.Uint64
}

func newSeenSet(n int) *seenSet {
	return &seenSet{seed: maphash.MakeSeed(), set: make(map[uint64]struct{}, n), ring: make([]uint64, 0, n)}
}

// add records id and reports whether it was seen already (and counts that
// as a dropped duplicate). The empty identity is never a duplicate.
func (s *seenSet) add(id string) (seen bool) {
	if id == "" {
		return false
	}
	h := maphash.String(s.seed, id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.set[h]; ok {
		s.dropped.Add(1)
		return true
	}
	if len(s.ring) < cap(s.ring) {
		s.ring = append(s.ring, h)
	} else {
		delete(s.set, s.ring[s.next])
		s.ring[s.next] = h
		s.next = (s.next + 1) % len(s.ring)
	}
	s.set[h] = struct{}{}
	return false
}
