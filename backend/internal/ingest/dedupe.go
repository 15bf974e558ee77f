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
		model, sub = p.Model, string(p.Cache)
	default:
		return "" // not reduced: nothing to guard
	}
	return string(ev.Type) + "\x00" + strconv.FormatInt(ev.At, 10) + "\x00" + model + "\x00" + sub
}

// seenSet remembers the hashes of the last n identities, with their at. A
// 64-bit hash keeps the memory near 16 bytes an event whatever the names'
// lengths; two of 65,536 events colliding is a one-in-2^33 chance.
//
// Once it has forgotten an identity, a repeat of it can no longer be told
// from a new event, so on a resumed stream an event stamped at or before
// the newest at forgotten is dropped too: a host replaying a history longer
// than the window then still counts each event once. Only an event that
// arrives over n events late (out of order by the window's length) would be
// lost instead, and only on a reconnection.
type seenSet struct {
	seed maphash.Seed

	mu       sync.Mutex
	set      map[uint64]struct{}
	ring     []seenEntry
	next     int
	forgot   bool  // an identity has left the window
	forgotAt int64 // the newest at among those that left

	repeats, beyond atomic.Uint64
}

type seenEntry struct {
	hash uint64
	at   int64
}

// verdict is what seenSet.add made of an event.
type verdict int

const (
	fresh     verdict = iota // not seen: remembered now, to publish
	repeat                   // its identity is in the window
	forgotten                // resumed, and no newer than what the window forgot
)

func newSeenSet(n int) *seenSet {
	return &seenSet{seed: maphash.MakeSeed(), set: make(map[uint64]struct{}, n), ring: make([]seenEntry, 0, n)}
}

// add judges the event of identity id stamped at, counting what it drops,
// and remembers it when fresh. resumed says whether the stream is a later
// connection, where a forgotten event may come again. The empty identity
// is always fresh.
func (s *seenSet) add(id string, at int64, resumed bool) verdict {
	if id == "" {
		return fresh
	}
	h := maphash.String(s.seed, id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.set[h]; ok {
		s.repeats.Add(1)
		return repeat
	}
	if resumed && s.forgot && at <= s.forgotAt {
		s.beyond.Add(1)
		return forgotten
	}
	e := seenEntry{hash: h, at: at}
	if len(s.ring) < cap(s.ring) {
		s.ring = append(s.ring, e)
	} else {
		old := s.ring[s.next]
		delete(s.set, old.hash)
		if !s.forgot || old.at > s.forgotAt {
			s.forgot, s.forgotAt = true, old.at
		}
		s.ring[s.next] = e
		s.next = (s.next + 1) % len(s.ring)
	}
	s.set[h] = struct{}{}
	return fresh
}
