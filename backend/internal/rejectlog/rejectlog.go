// Package rejectlog logs an event source's rejections without flooding the
// log: the first at once, then the count of those since, at most once per
// interval. Options.Words words it for other repeated failures (a followed
// host that cannot be reached). A count still pending is written when its interval ends, even
// if no rejection follows, and when the source stops (Flush), so a burst
// followed by silence still reaches the log.
package rejectlog

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/duration"
	"github.com/mlx-bun/mlx-metrics/shared/logkey"
	"github.com/mlx-bun/mlx-metrics/shared/plural"
)

// DefaultEvery is the default pace of the count lines.
const DefaultEvery = time.Minute

// Options configure a Log. The zero value is the defaults.
type Options struct {
	// Clock paces the lines and runs the interval's timer (clock.Real{}).
	Clock clock.Clock
	// Logger takes the lines, at Warn, with the source's name under
	// logkey.Source (slog.Default() when nil).
	Logger *slog.Logger
	// Every is the least time between two lines (DefaultEvery).
	Every time.Duration
	// Words say what is counted (RejectionWords when zero).
	Words Words
}

// Words word the lines: the first reads "name: First: what (further
// Further are counted, …)", a count "name: N One|Many in the last …;
// latest: what".
type Words struct {
	First, Further, One, Many string
}

// RejectionWords are the default Words: an event source's rejections.
var RejectionWords = Words{First: "rejected an event", Further: "rejections",
	One: "more event rejected", Many: "more events rejected"}

// Log is the rejection log of one source. It is safe for concurrent use.
type Log struct {
	name string
	opts Options

	mu       sync.Mutex
	logged   bool        // the first rejection was logged
	loggedAt time.Time   // when the last line was
	pending  uint64      // rejections since, not yet logged
	latest   string      // the last of them
	timer    clock.Timer // writes the pending count when the interval ends; nil when none
}

// New returns the log of the source called name (the lines' prefix).
func New(name string, opts Options) *Log {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	opts.Logger = logging.Or(opts.Logger).With(logkey.Source, name)
	if opts.Every <= 0 {
		opts.Every = DefaultEvery
	}
	if opts.Words == (Words{}) {
		opts.Words = RejectionWords
	}
	return &Log{name: name, opts: opts}
}

// Reject logs one rejection, described by what, or counts it towards the
// next line. A rejection after a quiet interval is logged at once.
func (l *Log) Reject(what string) {
	now := l.opts.Clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.logged {
		l.logged, l.loggedAt = true, now
		l.opts.Logger.Warn(fmt.Sprintf("%s: %s: %s (further %s are counted, logged at most every %s)", l.name, l.opts.Words.First, what, l.opts.Words.Further, duration.Of(l.opts.Every)))
		return
	}
	l.pending++
	l.latest = what
	if now.Sub(l.loggedAt) >= l.opts.Every {
		l.flush(now)
		return
	}
	if l.timer == nil {
		// The line is stamped with the interval's end, not the time the
		// timer ran, so the pace does not drift with the timer's delay.
		due := l.loggedAt.Add(l.opts.Every)
		var t clock.Timer
		t = l.opts.Clock.AfterFunc(due.Sub(now), func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.timer == t { // else flushed meanwhile, and maybe re-armed
				l.timer = nil
				l.flush(due)
			}
		})
		l.timer = t
	}
}

// Flush writes the pending count now, if there is one: the source stopped.
func (l *Log) Flush() {
	now := l.opts.Clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flush(now)
}

// Reset writes the pending count, as Flush does, and makes the next
// Reject a first again, logged at once: the failures it counted are over
// (a followed host answered), and a new run of them is news.
func (l *Log) Reset() {
	now := l.opts.Clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flush(now)
	l.logged = false
}

// flush writes the pending count and stops the timer; l.mu is held, and
// held while writing so that lines keep their order.
func (l *Log) flush(now time.Time) {
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	if l.pending == 0 {
		return
	}
	l.opts.Logger.Warn(fmt.Sprintf("%s: %s in the last %s; latest: %s", l.name,
		plural.Count(l.pending, l.opts.Words.One, l.opts.Words.Many), duration.Of(now.Sub(l.loggedAt)), l.latest))
	l.loggedAt, l.pending = now, 0
}
