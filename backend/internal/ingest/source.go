package ingest

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/plural"
)

// Options are what every source shares. The zero value is the default.
type Options struct {
	// Clock stamps the time checks and the log's pace (clock.Real{}).
	Clock clock.Clock
	// Logf writes a log line (to stderr, prefixed "mlx-metrics: ").
	Logf func(format string, args ...any)
	// LogEvery is how often a source logs a count of its rejections after
	// the first, which it logs at once (DefaultLogEvery).
	LogEvery time.Duration
	// MaxSkew is how far ahead of the clock an event may be stamped
	// (DefaultMaxSkew): a far-future at would make every real sample after
	// it look out of order.
	MaxSkew time.Duration
	// MaxAge is how far behind the clock an event of a live source (POST,
	// a followed stream) may be stamped (DefaultMaxAge). A replayed file
	// is history and has no such bound.
	MaxAge time.Duration
}

// Defaults for Options.
const (
	DefaultLogEvery = time.Minute
	DefaultMaxSkew  = 5 * time.Minute
	DefaultMaxAge   = 24 * time.Hour
)

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logf == nil {
		o.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, "mlx-metrics: "+format+"\n", args...) }
	}
	if o.LogEvery <= 0 {
		o.LogEvery = DefaultLogEvery
	}
	if o.MaxSkew <= 0 {
		o.MaxSkew = DefaultMaxSkew
	}
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultMaxAge
	}
	return o
}

// Source is one way events come in (POST /events, a followed stream, a
// replayed file). It checks each parsed event's time against the clock,
// publishes what passes, and counts what it accepted, ignored (valid, of a
// type the metrics do not use) and rejected, logging the first rejection
// at once and then a count at most once per LogEvery.
type Source struct {
	name string
	bus  *bus.Bus
	live bool
	opts Options

	accepted, ignored, rejected atomic.Uint64

	mu       sync.Mutex
	last     *Rejection
	logged   bool      // the first rejection was logged
	loggedAt time.Time // when the last count was
	unlogged uint64    // rejections since
}

// NewSource returns a source named name (for the log and /healthz)
// publishing to b. A live source also refuses events older than MaxAge.
func NewSource(name string, b *bus.Bus, live bool, opts Options) *Source {
	return &Source{name: name, bus: b, live: live, opts: opts.withDefaults()}
}

// Stats is a source's reading, for /healthz.
type Stats struct {
	Accepted      uint64     `json:"accepted"`
	Ignored       uint64     `json:"ignored"`
	Rejected      uint64     `json:"rejected"`
	LastRejection *Rejection `json:"lastRejection,omitempty"`
}

// Stats reads the source's counts.
func (s *Source) Stats() Stats {
	s.mu.Lock()
	last := s.last
	s.mu.Unlock()
	return Stats{Accepted: s.accepted.Load(), Ignored: s.ignored.Load(), Rejected: s.rejected.Load(), LastRejection: last}
}

// outcome is what offer did with one event.
type outcome int

const (
	accepted outcome = iota // a core event, published
	ignored                 // a valid event of another type, published for whoever wants it
	refused                 // its time is out of bounds; rejected and counted
)

// offer publishes ev unless its time is out of bounds, which rejects it:
// the rejection returned is pos (its place in the input) with the reason,
// already counted and logged.
func (s *Source) offer(ev events.Event, pos Rejection) (outcome, Rejection) {
	if r := s.checkTime(ev.At); r != "" {
		pos.Field, pos.Reason = "at", r
		s.reject(pos)
		return refused, pos
	}
	s.bus.Publish(ev)
	if ev.Payload == nil {
		s.ignored.Add(1)
		return ignored, pos
	}
	s.accepted.Add(1)
	return accepted, pos
}

func (s *Source) checkTime(at int64) string {
	now := s.opts.Clock.Now()
	if t := time.UnixMilli(at); t.After(now.Add(s.opts.MaxSkew)) {
		return fmt.Sprintf("%d is %v ahead of this server's clock (at most %v allowed)",
			at, t.Sub(now).Round(time.Second), s.opts.MaxSkew)
	} else if s.live && t.Before(now.Add(-s.opts.MaxAge)) {
		return fmt.Sprintf("%d is %v behind this server's clock (a live source may lag at most %v)",
			at, now.Sub(t).Round(time.Second), s.opts.MaxAge)
	}
	return ""
}

// reject counts r and logs it, or counts it towards the next log line.
func (s *Source) reject(r Rejection) {
	s.rejected.Add(1)
	now := s.opts.Clock.Now()
	s.mu.Lock()
	s.last = &r
	var line string
	switch {
	case !s.logged:
		s.logged, s.loggedAt = true, now
		line = fmt.Sprintf("%s: rejected an event: %s (further rejections are counted, logged at most every %v)", s.name, r, s.opts.LogEvery)
	case now.Sub(s.loggedAt) >= s.opts.LogEvery:
		n := s.unlogged + 1
		line = fmt.Sprintf("%s: %s rejected in the last %v; latest: %s", s.name, plural.Count(n, "more event", "more events"), now.Sub(s.loggedAt).Round(time.Second), r)
		s.loggedAt, s.unlogged = now, 0
	default:
		s.unlogged++
	}
	s.mu.Unlock()
	if line != "" {
		s.opts.Logf("%s", line)
	}
}
