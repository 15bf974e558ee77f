package ingest

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/redact"
	"github.com/mlx-bun/mlx-metrics/backend/internal/rejectlog"
	"github.com/mlx-bun/mlx-metrics/shared/duration"
	"github.com/mlx-bun/mlx-metrics/shared/logkey"
	"github.com/mlx-bun/mlx-metrics/shared/plural"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// Whether the follower reaches its host: a host that cannot be reached
// sends no events, which alone would read as an idle host. An attempt
// that fails to connect (or is refused) makes the state unreached, logs
// its reason (the first at once, then a count at most every LogEvery:
// rejectlog) and calls OnChange; reaching the host again says so in the
// log once. A stream that ends after connecting is not a failure of
// reach: the state is connecting until the next attempt ends.

// failWords word the log of failed attempts.
var failWords = rejectlog.Words{First: "cannot reach the host", Further: "failed attempts",
	One: "more failed attempt", Many: "more failed attempts"}

// statusError is a host's answer other than 2xx.
type statusError struct{ url, status string }

func (e *statusError) Error() string { return "GET " + e.url + ": " + e.status }

// reason is err without the URL that *url.Error and statusError repeat:
// the log line names the source already, and the panel must not show the
// URL's path, query or credentials.
func reason(err error) string {
	var se *statusError
	if errors.As(err, &se) {
		return "answered " + se.status
	}
	return redact.URLError(err)
}

// redacted is raw with any password masked, for the log.
func redacted(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return raw
}

// hostOf is raw's host[:port] alone, for the panel.
func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return ""
}

// setState moves to state at the clock's time, if it is not there already.
func (s *FollowStatus) setState(state string, now int64) {
	if s.State != state {
		s.State, s.Since = state, now
	}
}

// reached records a connection: the failures it ends are logged as over.
func (f *Follower) reached() {
	var failed uint64
	f.update(func(s *FollowStatus) {
		failed = s.FailedAttempts
		s.setState(snapshot.SourceConnected, f.clock.Now().UnixMilli())
		s.FailedAttempts, s.reason = 0, ""
	})
	if failed > 0 {
		f.fails.Reset()
		f.log.Info(fmt.Sprintf("%s: reached the host after %s", f.logName, plural.Count(failed, "failed attempt", "failed attempts")), logkey.Source, f.logName)
	}
	f.changed()
}

// failed records an attempt that did not connect, for err.
func (f *Follower) failed(err error) {
	why := reason(err)
	f.update(func(s *FollowStatus) {
		s.setState(snapshot.SourceUnreached, f.clock.Now().UnixMilli())
		s.FailedAttempts++
		s.reason = why
	})
	f.fails.Reject(why)
	f.changed()
}

// ended records a stream that ended after connecting: reconnecting.
func (f *Follower) ended() {
	f.update(func(s *FollowStatus) { s.setState(snapshot.SourceConnecting, f.clock.Now().UnixMilli()) })
	f.changed()
}

func (f *Follower) changed() {
	if f.cfg.OnChange != nil {
		f.cfg.OnChange()
	}
}

// Reach is the follower's state as the snapshot carries it.
func (f *Follower) Reach() snapshot.Source {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.status
	return snapshot.Source{Kind: snapshot.SourceFollow, Host: hostOf(f.url), State: s.State, Since: s.Since,
		FailedAttempts: s.FailedAttempts, Error: s.reason}
}

// Degraded is why /healthz should call the follower degraded, or "".
func (f *Follower) Degraded() string {
	src := f.Reach()
	if src.State != snapshot.SourceUnreached {
		return ""
	}
	return "cannot reach the followed host " + src.Host + " (" + src.Error + ") for " +
		duration.Of(f.clock.Now().Sub(time.UnixMilli(src.Since))) + ", " + plural.Count(src.FailedAttempts, "failed attempt", "failed attempts")
}
