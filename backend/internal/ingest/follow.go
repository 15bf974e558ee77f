package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/backend/internal/redact"
	"github.com/mlx-bun/mlx-metrics/backend/internal/rejectlog"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
	"github.com/mlx-bun/mlx-metrics/shared/sse"
)

// Follower follows a host's event stream at URL, server-sent events or
// NDJSON (by the response's Content-Type), and publishes what it reads.
// When the stream ends or fails it reconnects, waiting MinBackoff at first
// and doubling up to MaxBackoff while attempts keep failing; a connection
// that delivered events resets the wait. A bad line is counted, never fatal.
//
// On reconnecting it sends Last-Event-ID with the last SSE id it saw, and it
// never publishes the same event twice, even from a host that replays its
// stream from the start on each connection: it remembers the identity of
// the last DedupeWindow events it published (see identity), and after a
// reconnection drops what is no newer than the events it forgot (seenSet).
// Whether it reaches the host is its State (follow_reach.go).
type Follower struct {
	url string
	cfg FollowerOptions // defaults filled in

	*Source
	clock   clock.Clock
	seen    *seenSet
	logName string // "follow " and the URL, its password masked
	log     *slog.Logger
	fails   *rejectlog.Log // the failed attempts to connect

	mu     sync.Mutex
	status FollowStatus // its LastEventID is sent back on reconnect
}

// DedupeWindow is how many recently published events a Follower remembers
// to drop their repeats.
const DedupeWindow = 1 << 16

// FollowStatus is the follower's state, for /healthz.
type FollowStatus struct {
	URL string `json:"url"`
	// State is snapshot.SourceConnecting, SourceConnected or
	// SourceUnreached, since Since (epoch ms); FailedAttempts are the
	// attempts that failed to connect since the host was last reached.
	State          string `json:"state"`
	Since          int64  `json:"since"`
	FailedAttempts uint64 `json:"failedAttempts"`
	reason         string // the last failed attempt's, without the URL
	Connected      bool   `json:"connected"`
	Connects       uint64 `json:"connects"`
	Failures       uint64 `json:"failures"`
	LastError      string `json:"lastError,omitempty"`
	NextRetryMs    int64  `json:"nextRetryMs,omitempty"`
	LastEventID    string `json:"lastEventId,omitempty"`
	Duplicates     uint64 `json:"duplicates"` // repeats of published events, dropped
	// BeyondWindow counts events dropped after a reconnection for being no
	// newer than the events the dedupe window forgot: presumed repeats.
	BeyondWindow uint64 `json:"beyondWindow"`
	Events       Stats  `json:"events"`
}

// FollowerOptions configure a Follower. The zero value is the defaults.
type FollowerOptions struct {
	Options // the source's
	// Token is sent as a bearer token when set.
	Token string
	// MinBackoff is the first wait before reconnecting (500 ms when 0);
	// MaxBackoff the longest (30 s, or MinBackoff if that is longer).
	MinBackoff, MaxBackoff time.Duration
	// IdleTimeout drops a connection that delivers nothing, not even a
	// keep-alive, for this long: a half-open TCP connection would otherwise
	// wait forever (60 s when 0; wall-clock, as it guards a real socket).
	IdleTimeout time.Duration
	// Client makes the requests (http.DefaultClient, which has no timeout,
	// when nil: the stream is long-lived).
	Client *http.Client
	// OnChange is called, on the follower's goroutine, after its State or
	// FailedAttempts changed: Reach then reads the change. Nil calls nothing.
	OnChange func()
}

// NewFollower returns a follower of url publishing to b; Run starts it.
func NewFollower(b *bus.Bus, url string, opts FollowerOptions) *Follower {
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 500 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(30*time.Second, opts.MinBackoff)
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 60 * time.Second
	}
	if opts.Client == nil {
		opts.Client = http.DefaultClient
	}
	name := "follow " + redacted(url)
	src := NewSource(name, b, Live, opts.Options)
	o := src.opts
	return &Follower{url: url, cfg: opts, Source: src, clock: o.Clock, seen: newSeenSet(DedupeWindow),
		logName: name, log: o.Logger,
		fails:  rejectlog.New(name, rejectlog.Options{Clock: o.Clock, Logger: o.Logger, Every: o.LogEvery, Words: failWords}),
		status: FollowStatus{State: snapshot.SourceConnecting, Since: o.Clock.Now().UnixMilli()}}
}

// Status reports the follower's state.
func (f *Follower) Status() FollowStatus {
	f.mu.Lock()
	st := f.status
	f.mu.Unlock()
	st.URL = redact.URL(f.url)
	st.Events = f.Stats()
	st.Duplicates = f.seen.repeats.Load()
	st.BeyondWindow = f.seen.beyond.Load()
	return st
}

func (f *Follower) update(fn func(*FollowStatus)) {
	f.mu.Lock()
	fn(&f.status)
	f.mu.Unlock()
}

// Run follows the stream until ctx ends, then logs the count of rejections
// and failed attempts not yet logged.
func (f *Follower) Run(ctx context.Context) {
	defer f.FlushLog()
	defer f.fails.Flush()
	minB, maxB := f.cfg.MinBackoff, f.cfg.MaxBackoff
	clk := f.clock
	wait := minB
	for ctx.Err() == nil {
		got, retry, connected, err := f.once(ctx)
		if ctx.Err() != nil {
			return
		}
		if retry > 0 {
			minB = min(retry, maxB) // the server's advice, as an EventSource takes it
		}
		if got > 0 {
			wait = minB
		}
		f.update(func(s *FollowStatus) {
			s.Connected = false
			s.Failures++
			if err != nil {
				s.LastError = reason(err) // the URL is URL's, shown without its secrets
			} else {
				s.LastError = "stream ended"
			}
			s.NextRetryMs = wait.Milliseconds()
		})
		if connected {
			f.ended()
		} else {
			f.failed(err)
		}
		if clk.Sleep(ctx, wait) != nil {
			return
		}
		wait = min(wait*2, maxB)
	}
}

// once makes one connection and reads it to its end. It reports how many
// events it accepted, any retry the server advised, and whether it
// connected (err then ended the stream, not the attempt).
func (f *Follower) once(ctx context.Context) (accepted int, retry time.Duration, connected bool, err error) {
	idle := f.cfg.IdleTimeout
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watchdog := time.AfterFunc(idle, func() { cancel(fmt.Errorf("nothing received for %v", idle)) })
	defer watchdog.Stop()
	defer func() {
		if cause := context.Cause(ctx); cause != nil && cause != context.Canceled && err != nil {
			err = cause
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url, nil)
	if err != nil {
		return 0, 0, false, err
	}
	req.Header.Set("Accept", "text/event-stream, application/x-ndjson;q=0.9")
	if f.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+f.cfg.Token)
	}
	if id := f.LastID(); id != "" {
		req.Header.Set("Last-Event-ID", id)
	}
	resp, err := f.cfg.Client.Do(req)
	if err != nil {
		return 0, 0, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return 0, 0, false, &statusError{f.url, resp.Status}
	}
	var resumed bool // an earlier connection delivered: its events may come again
	f.update(func(s *FollowStatus) {
		s.Connected, s.Connects, s.NextRetryMs = true, s.Connects+1, 0
		resumed = s.Connects > 1
	})
	f.reached()
	accept := func(ev events.Event, pos Rejection) {
		if f.seen.add(identity(ev), ev.At, resumed) != fresh {
			return // published already, from this connection or an earlier one
		}
		if out, _ := f.offer(ev, pos); out != refused {
			accepted++
		}
	}
	// Each read checks ctx itself, so a stop is seen within one read
	// whatever the Client's transport does with a cancelled body.
	body := &idleReader{r: ctxReader{ctx, resp.Body}, watchdog: watchdog, idle: idle}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "text/event-stream" {
		retry, err = decodeSSE(body, sse.Options{Clock: f.clock, LastEventID: f.LastID()}, accept, f.reject, f.setLastID)
	} else {
		err = Decode(body, accept, f.reject)
	}
	return accepted, retry, true, err
}

// LastID is the last SSE event id the stream carried.
func (f *Follower) LastID() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status.LastEventID
}

func (f *Follower) setLastID(id string) { f.update(func(s *FollowStatus) { s.LastEventID = id }) }

// decodeSSE reads server-sent events (package sse, with opts) whose data
// is one event object (or an array of them). Comments and event names are
// ignored; an event's number is its position in the stream, for
// rejections. setID is called with the last event ID whenever a dispatch
// changes it from opts.LastEventID, as an EventSource sets it, unless it
// is over 1024 bytes (the header it goes in stays bounded); an event still
// open when the stream ends is never dispatched. retry is the server's
// last valid advice above 0.
func decodeSSE(r io.Reader, opts sse.Options, accept func(events.Event, Rejection), reject func(Rejection), setID func(string)) (retry time.Duration, err error) {
	opts.MaxBytes = events.MaxLineBytes
	rd := sse.NewReader(r, opts)
	lastID := opts.LastEventID
	dispatched := 0
	for {
		ev, err := rd.Next()
		if id := rd.LastEventID(); id != lastID && len(id) <= maxLastEventID {
			lastID = id
			setID(id)
		}
		if d, ok := rd.Retry(); ok && d > 0 {
			retry = d
		}
		switch {
		case err == io.EOF:
			// An event the stream ends inside, before its blank line, is
			// discarded with its id, as the SSE spec says: it may be cut
			// short, and a host that resumes from the last id dispatched
			// sends it again.
			return retry, nil
		case errors.Is(err, sse.ErrTooLong):
			dispatched++
			reject(Rejection{Line: dispatched, Reason: fmt.Sprintf("event is over %d bytes", events.MaxLineBytes)})
			continue
		case err != nil:
			return retry, err
		case len(ev.Data) == 0:
			continue
		}
		dispatched++
		n := dispatched
		_ = Decode(bytes.NewReader(ev.Data), func(ev events.Event, _ Rejection) {
			accept(ev, Rejection{Line: n})
		}, func(rj Rejection) {
			rj.Line = n
			rj.Index = nil
			reject(rj)
		})
	}
}

// maxLastEventID bounds the id sent back as Last-Event-ID.
const maxLastEventID = 1024

// idleReader pushes the watchdog back each time bytes arrive.
type idleReader struct {
	r        io.Reader
	watchdog *time.Timer
	idle     time.Duration
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.watchdog.Reset(r.idle)
	}
	return n, err
}
