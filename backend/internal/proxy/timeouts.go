package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// Defaults of the proxy's bounds on its upstream and its clients.
const (
	// DefaultHeadTimeout bounds the wait for an answer's head: a
	// non-streamed completion's comes only when the whole completion is
	// done, so it is long (LiteLLM's default request timeout is the same).
	DefaultHeadTimeout = 10 * time.Minute
	// DefaultIdleTimeout bounds each wait for more of an answer's body: a
	// streamed completion is quiet while it waits in the engine's queue.
	DefaultIdleTimeout = 5 * time.Minute
	// DefaultStallTimeout bounds how long a client may leave its answer
	// unread once its connection's buffers are full: a client that stops
	// reading would otherwise pin a generation until it closed.
	DefaultStallTimeout = 30 * time.Second
)

// errIdle is the cause of an upstream request cancelled for its answer
// going quiet past the idle timeout.
var errIdle = errors.New("the upstream sent nothing within the idle timeout")

// upstreamReader reads an upstream answer's body for the client. A read
// that gets nothing for the idle timeout cancels the upstream request
// (with errIdle), which ends the read; each read handed on gives the
// client's connection the stall timeout to take it, as a write deadline:
// a write blocked past it fails, fasthttp closes the answer, and that
// cancels the upstream request as a client leaving does.
type upstreamReader struct {
	body        io.ReadCloser
	clock       clock.Clock
	idle, stall time.Duration
	cancel      context.CancelCauseFunc
	conn        net.Conn // the client's
}

func (u *upstreamReader) Read(p []byte) (int, error) {
	t := u.clock.AfterFunc(u.idle, func() { u.cancel(errIdle) })
	n, err := u.body.Read(p)
	t.Stop()
	if n > 0 {
		// The kernel's clock, not the injected one: it is a socket's.
		_ = u.conn.SetWriteDeadline(time.Now().Add(u.stall))
	}
	return n, err
}

// Close closes the upstream body and lifts the write deadline, which a
// later answer on the same connection must not inherit (fasthttp sets
// none for the proxy's route, which streams: server.Route.Streams).
func (u *upstreamReader) Close() error {
	_ = u.conn.SetWriteDeadline(time.Time{})
	return u.body.Close()
}
