package ingest

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/backend/internal/rejectlog"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/duration"
	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// Options are what every source shares. The zero value is the default.
type Options struct {
	// Clock stamps the time checks and the log's pace (clock.Real{}).
	Clock clock.Clock
	// Logger takes the source's log lines (slog.Default() when nil).
	Logger *slog.Logger
	// LogEvery is how often a source logs a count of its rejections after
	// the first, which it logs at once (rejectlog.DefaultEvery).
	LogEvery time.Duration
	// MaxSkew is how far ahead of the clock an event may be stamped
	// (DefaultMaxSkew): a far-future at would make every real sample after
	// it look out of order.
	MaxSkew time.Duration
	// MaxAge is how far behind the clock an event of a live source (POST,
	// a followed stream) may be stamped (DefaultMaxAge). A replayed file
	// is history and has no such bound.
	MaxAge time.Duration
	// Requests, shared by every source of a backend, counts a request
	// two sources report once (Requests); nil checks nothing.
	Requests *Requests
}

// Defaults for Options.
const (
	DefaultMaxSkew = 5 * time.Minute
	DefaultMaxAge  = 24 * time.Hour
)

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	o.Logger = logging.Or(o.Logger)
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
// at once and then a count at most once per LogEvery (rejectlog).
type Source struct {
	name string
	bus  *bus.Bus
	age  Age
	opts Options
	log  *rejectlog.Log

	accepted, ignored, rejected, duplicates atomic.Uint64

	mu   sync.Mutex
	last *Rejection
}

// Age says whether a source refuses events for how old they are.
type Age int

const (
	// Live: the events happen now (POST /events, a followed stream, the
	// proxy), so one older than Options.MaxAge is refused.
	Live Age = iota
	// Recorded: the events are a record of the past (a replayed file),
	// taken whatever their age.
	Recorded
)

// NewSource returns a source named name (for the log and /healthz)
// publishing to b; age says whether it refuses events older than MaxAge.
func NewSource(name string, b *bus.Bus, age Age, opts Options) *Source {
	opts = opts.withDefaults()
	return &Source{name: name, bus: b, age: age, opts: opts,
		log: rejectlog.New(name, rejectlog.Options{Clock: opts.Clock, Logger: opts.Logger, Every: opts.LogEvery})}
}

// FlushLog writes the count of rejections not logged yet, if any: call it
// when the source stops (Replay and Follower.Run do), so that the end of a
// burst is not left out of the log.
func (s *Source) FlushLog() { s.log.Flush() }

// Stats is a source's reading, for /healthz.
type Stats struct {
	Accepted uint64 `json:"accepted"`
	Ignored  uint64 `json:"ignored"`
	Rejected uint64 `json:"rejected"`
	// Duplicates are requests another source reported first (Requests).
	Duplicates    uint64     `json:"duplicates"`
	LastRejection *Rejection `json:"lastRejection,omitempty"`
}

// Stats reads the source's counts.
func (s *Source) Stats() Stats {
	s.mu.Lock()
	last := s.last
	s.mu.Unlock()
	return Stats{Accepted: s.accepted.Load(), Ignored: s.ignored.Load(), Rejected: s.rejected.Load(),
		Duplicates: s.duplicates.Load(), LastRejection: last}
}

// outcome is what offer did with one event.
type outcome int

const (
	accepted  outcome = iota // a core event, published
	ignored                  // a valid event of another type, published for whoever wants it
	refused                  // its time is out of bounds; rejected and counted
	duplicate                // a request another source reported; counted, not published
)

// Publish offers an event made in the process (the proxy's measurements):
// it is validated as an event from the wire is (events.Check) and its time
// checked, then published and counted, or rejected, counted and logged.
func (s *Source) Publish(ev events.Event) {
	if err := events.Check(ev); err != nil {
		s.reject(rejection(err))
		return
	}
	s.offer(ev, Rejection{})
}

// offer publishes ev unless its time is out of bounds, which rejects it:
// the rejection returned is pos (its place in the input) with the reason,
// already counted and logged.
func (s *Source) offer(ev events.Event, pos Rejection) (outcome, Rejection) {
	// Another type's time is not checked: the store does not reduce it, so
	// a host's stale catalog.changed is ignored, not rejected.
	// Counted before published: whoever has seen the event sees it counted.
	if ev.Payload == nil {
		s.ignored.Add(1)
		s.bus.Publish(ev)
		return ignored, pos
	}
	if r := s.checkTime(ev.At); r != "" {
		pos.Field, pos.Reason = "at", r
		s.reject(pos)
		return refused, pos
	}
	if p, ok := ev.Payload.(*events.RequestFinished); ok && s.opts.Requests != nil {
		if _, dup := s.opts.Requests.Duplicate(s.name, p.RequestID, s.opts.Clock.Now()); dup {
			s.duplicates.Add(1)
			return duplicate, pos
		}
	}
	s.accepted.Add(1)
	s.bus.Publish(ev)
	return accepted, pos
}

// checkTime says why at is too far from now, or "". It counts in
// milliseconds: at may be thousands of years away, past what a
// time.Duration holds (292 years), which would print a clamped gap.
func (s *Source) checkTime(at int64) string {
	now := s.opts.Clock.Now().UnixMilli()
	if at > now+s.opts.MaxSkew.Milliseconds() {
		return fmt.Sprintf("%d is %s ahead of this server's clock (at most %s allowed)",
			at, wholeSeconds(at-now), duration.Of(s.opts.MaxSkew))
	} else if s.age == Live && at < now-s.opts.MaxAge.Milliseconds() {
		return fmt.Sprintf("%d is %s behind this server's clock (a live source may lag at most %s)",
			at, wholeSeconds(now-at), duration.Of(s.opts.MaxAge))
	}
	return ""
}

// wholeSeconds writes a positive gap of ms milliseconds to the second.
func wholeSeconds(ms int64) string { return duration.Ms(float64((ms + 500) / 1000 * 1000)) }

// reject counts r and logs it, or counts it towards the next log line.
func (s *Source) reject(r Rejection) {
	s.rejected.Add(1)
	s.mu.Lock()
	s.last = &r
	s.mu.Unlock()
	s.log.Reject(r.String())
}
