package proxy

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/sse"
)

// relay is a measured answer, or an unmeasured one of unknown length, as
// fasthttp reads it. fasthttp's connection goroutine reads the upstream
// through it straight into its own buffer: no pipe between two goroutines
// and no copy into one. An answer of unknown length it writes and flushes
// read by read, each Read one chunk; one of known length it writes with
// its length as it reads, flushing as its buffer fills.
//
// For an event stream a Read returns whole events where it can: up to the
// last blank line in what the upstream has sent (sse.EventEnd). Bytes after
// it, the start of an event, wait in carry for the rest of their event, and
// a Read that has no complete event yet reads on instead of returning. So
// a flush carries every complete event that has arrived, never holds one
// back, and never goes out for half an event. Any other answer is returned
// read by read, as it has no boundaries to wait for.
//
// The client gets the bytes first: the meter reads a copy of what a Read
// returned at the next Read, once fasthttp has written it, stamped with
// the time of the upstream read that completed it. fasthttp closes the
// relay once the answer is written or the client is gone; Close ends the
// upstream request and publishes the measurement.
type relay struct {
	p      *Proxy
	ctx    context.Context
	cancel func()
	body   io.ReadCloser
	status int
	m      *meter // nil: not measured
	sse    bool
	empty  bool // the upstream said its answer has no body (Content-Length: 0)

	carry  []byte    // SSE: the incomplete event after the last boundary sent
	prev   [2]byte   // SSE: the last two bytes sent, which a boundary may continue
	at     time.Time // when the latest upstream read returned
	sent   []byte    // a copy of what the last Read returned, for the meter
	sentAt time.Time // when its last byte arrived
	ended  bool      // the upstream's answer is over (o says how)
	closed bool
	o      outcome
}

// Read fills p from the upstream, as described on relay. An upstream that
// fails mid-answer, or a server shutting down, ends the client's answer
// cleanly at what arrived; the event records it.
func (r *relay) Read(p []byte) (int, error) {
	r.measure()
	if r.ended {
		return 0, io.EOF
	}
	n := copy(p, r.carry)
	r.carry = r.carry[:copy(r.carry, r.carry[n:])]
	for n < len(p) && len(r.carry) == 0 {
		k, err := r.body.Read(p[n:])
		if k > 0 {
			r.at = r.p.clock.Now()
		}
		from := n
		n += k
		if err != nil {
			r.end(err)
			break // all of it: nothing more will complete an event
		}
		if !r.sse {
			if n > 0 {
				break
			}
			continue
		}
		if cut := sse.EventEnd(r.prev, p[:n], from); cut > 0 {
			r.carry = append(r.carry[:0], p[cut:n]...)
			n = cut
			break
		}
	}
	if n == 0 {
		return 0, io.EOF
	}
	switch {
	case n >= 2:
		r.prev = [2]byte{p[n-2], p[n-1]}
	default:
		r.prev = [2]byte{r.prev[1], p[0]}
	}
	if r.m != nil {
		r.sent, r.sentAt = append(r.sent[:0], p[:n]...), r.at
	}
	return n, nil
}

// measure hands the meter what the last Read returned.
func (r *relay) measure() {
	if r.m != nil && len(r.sent) > 0 {
		r.m.write(r.sent, r.sentAt)
		r.sent = r.sent[:0]
	}
}

// end records how the upstream's answer ended.
func (r *relay) end(err error) {
	r.ended = true
	if err == io.EOF {
		r.o = outcome{end: r.p.clock.Now()}
		return
	}
	// The server shutting down, or the upstream failing mid-answer (or
	// going quiet past the idle timeout).
	shutdown := r.ctx.Err() != nil && !errors.Is(context.Cause(r.ctx), errIdle)
	r.o = outcome{end: r.p.clock.Now(), cancelled: shutdown, broken: !shutdown}
}

// Close ends the upstream request and publishes the measurement. Closed
// before the upstream's answer ended, the client went away: the upstream
// request is cancelled, which stops the generation there.
func (r *relay) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.measure()
	switch {
	case !r.ended && r.empty:
		// Complete unread: fasthttp reads no body for a 204 or a 304.
		r.end(io.EOF)
	case !r.ended:
		r.ended, r.o = true, outcome{end: r.p.clock.Now(), cancelled: true}
	}
	r.cancel()
	err := r.body.Close()
	r.o.status = r.status
	r.p.finish(r.m, r.o)
	return err
}
