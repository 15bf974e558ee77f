package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
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
//
// The idle timeout is one timer per answer, not one per read: a read
// notes when it began waiting, and the timer, when it fires, cancels if
// the read in progress has waited the idle timeout, and otherwise comes
// back when it would have. Arming and stopping a timer for every event
// cost more than the rest of the relay's own work.
type upstreamReader struct {
	body        io.ReadCloser
	clock       clock.Clock
	idle, stall time.Duration
	cancel      context.CancelCauseFunc
	conn        net.Conn // the client's

	base    time.Time    // on clock: what waiting counts from
	waiting atomic.Int64 // since base, +1, when the read in progress began; 0 between reads
	armed   bool         // the idle timer was started (by the reading goroutine)

	mu     sync.Mutex
	timer  clock.Timer // the idle timer, re-armed by expire
	closed bool
}

func (u *upstreamReader) Read(p []byte) (int, error) {
	if !u.armed {
		u.armed = true
		u.base = u.clock.Now()
		u.mu.Lock()
		if !u.closed {
			u.timer = u.clock.AfterFunc(u.idle, u.expire)
		}
		u.mu.Unlock()
	}
	u.waiting.Store(int64(u.clock.Now().Sub(u.base)) + 1)
	n, err := u.body.Read(p)
	u.waiting.Store(0)
	if n > 0 {
		// The kernel's clock, not the injected one: it is a socket's.
		_ = u.conn.SetWriteDeadline(time.Now().Add(u.stall))
	}
	return n, err
}

// expire is the idle timer: it cancels the upstream request if the read
// in progress has waited the idle timeout, and otherwise re-arms itself
// for when it would have (the whole timeout when no read is waiting).
func (u *upstreamReader) expire() {
	next := u.idle
	if w := u.waiting.Load(); w != 0 {
		waited := u.clock.Now().Sub(u.base) - time.Duration(w-1)
		if waited >= u.idle {
			u.cancel(errIdle)
			return
		}
		next = u.idle - waited
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.closed {
		u.timer = u.clock.AfterFunc(next, u.expire)
	}
}

// Close stops the idle timer, closes the upstream body and lifts the
// write deadline, which a later answer on the same connection must not
// inherit (fasthttp sets none for the proxy's route, which streams:
// server.Route.Streams).
func (u *upstreamReader) Close() error {
	u.mu.Lock()
	u.closed = true
	if u.timer != nil {
		u.timer.Stop()
	}
	u.mu.Unlock()
	_ = u.conn.SetWriteDeadline(time.Time{})
	return u.body.Close()
}
