package stream

import (
	"net"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// closeGrace bounds a stream's end at Close: the write in progress and
// the closing chunk. It is wall-clock on purpose: it guards a real socket.
const closeGrace = time.Second

// DefaultKeepAlive is the idle time before a keep-alive comment, which
// also finds out a client that went away: the hub's default, and the job
// streams'.
const DefaultKeepAlive = 15 * time.Second

var (
	crlf             = []byte("\r\n")
	keepAliveComment = []byte(": keepalive\n\n")
	lastChunk        = []byte("0\r\n\r\n")
)

// conn is a client's writing side: the socket and the scratch space that
// lets every write be one writev of shared frames, with no copy.
type conn struct {
	net.Conn
	chunked bool        // HTTP/1.1: each event is a chunk; else the body ends at close
	vec     [8][]byte   // one write's parts
	bufs    net.Buffers // over vec; a field, so that a write allocates nothing
	line    []byte      // one write's chunk-size line
	stamp   [3][]byte   // the opening frame, restamped
	digits  []byte      // the opening frame's "at"
	lead    []byte      // a response head finish must send first
}

// Handler serves GET /stream. Once the handler chain has run, the
// connection is hijacked: the response head is written from the response
// header the chain left (so headers a middleware set, CORS among them,
// are kept), then the events, as chunks for HTTP/1.1 and until the close
// for HTTP/1.0.
func (h *Hub) Handler(c *fiber.Ctx) error {
	h.mu.Lock()
	closing := h.closing
	fr, err := h.currentLocked(h.opts.Clock.Now())
	h.mu.Unlock()
	if closing {
		return fiber.NewError(fiber.StatusServiceUnavailable, "the server is shutting down")
	}
	if err != nil {
		return fiber.NewError(fiber.StatusInternalServerError, "encoding the snapshot: "+err.Error())
	}
	SetHeaders(c)
	ctx := c.Context()
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(nc net.Conn) { h.serve(ctx, nc, fr) })
	return nil
}

// serve is the client's goroutine, from the hijack until the stream ends;
// the server closes the connection when it returns.
func (h *Hub) serve(ctx *fasthttp.RequestCtx, nc net.Conn, fr *frame) {
	w, head, ok := open(ctx, nc)
	if !ok {
		return
	}
	cl := &client{wake: make(chan struct{}, 1), conn: w.Conn}

	// The opening frame carries the time it is sent.
	now := h.opts.Clock.Now()
	if !fr.stampable() {
		if v, data, err := h.src.Encode(now); err == nil {
			h.encoded.Add(1)
			fr = newFrame(v, data)
		}
	}
	opening := [][]byte{fr.data}
	if fr.stampable() {
		opening, _ = fr.stamped(w.stamp[:0], w.digits, now)
	}

	h.mu.Lock()
	if h.closing {
		h.mu.Unlock()
		return
	}
	// The opening frame stands for the coming tick, which is less than an
	// Interval away: the next frame waits for the tick after it.
	cl.version, cl.dueTick, cl.lastSent = fr.version, h.seq+2, now
	h.clients[cl] = struct{}{}
	h.writers.Add(1)
	h.mu.Unlock()
	h.connected.Add(1)
	defer h.remove(cl)

	h.sent.Add(1)
	err := h.write(cl, w, fr, head, append([][]byte{h.retry}, opening...)...)
	opened := err == nil
	for err == nil {
		select {
		case <-h.done:
			err = errClosing
			continue
		case <-cl.wake:
		}
		h.passTurn() // before the write, which a slow reader may hold
		next, ka := cl.take()
		switch {
		case next != nil:
			next = cl.moveTo(h.fresher(next))
			h.sent.Add(1)
			err = h.write(cl, w, next, nil, next.data)
		case ka:
			h.keepAlives.Add(1)
			err = h.write(cl, w, nil, nil, keepAliveComment)
		}
	}
	if err == errClosing {
		// Every write so far completed (or none began): the stream ends
		// cleanly, with the head first if the opening frame never went.
		if !opened {
			w.lead = head
		}
		w.finish(cl.graceEnd())
	}
}

// write writes lead as it is, then parts as one event, in one writev
// (conn.prepare). An error means the stream is over: errClosing when no
// write may begin because the hub is closing, so what was sent is whole
// and the stream can end cleanly; errCutOff when the client was cut off
// (its last write timed out, even if it then completed); another when the
// write failed part-way (the client went away, or was cut off during it).
func (h *Hub) write(cl *client, w *conn, fr *frame, lead []byte, parts ...[]byte) error {
	if err := cl.begin(fr, w.prepare(lead, parts...), h.opts.Clock.Now()); err != nil {
		if err == errCutOff {
			h.dropped.Add(1)
		}
		return err
	}
	if h.opts.onWrite != nil {
		h.opts.onWrite()
	}
	_, err := w.flush()
	if closing := cl.end(); err != nil {
		if !closing {
			h.dropped.Add(1)
		}
		return err
	}
	return nil
}

// prepare lays out one write: lead as it is, then parts as one event (a
// chunk for HTTP/1.1). It reports the write's size in bytes.
func (w *conn) prepare(lead []byte, parts ...[]byte) int {
	size := 0
	for _, p := range parts {
		size += len(p)
	}
	bufs := w.vec[:0]
	if len(lead) > 0 {
		bufs = append(bufs, lead)
	}
	if w.chunked {
		w.line = chunkSize(w.line[:0], size)
		bufs = append(bufs, w.line)
	}
	bufs = append(bufs, parts...)
	if w.chunked {
		bufs = append(bufs, crlf)
	}
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	w.bufs = bufs
	return n
}

// flush writes what prepare laid out, in one writev.
func (w *conn) flush() (int64, error) {
	n, err := w.bufs.WriteTo(w.Conn)
	clear(w.vec[:]) // hold no frame past its write
	return n, err
}

// finish ends the stream by deadline (wall clock): w.lead if set (a
// response head not yet sent), then the closing chunk of an HTTP/1.1
// stream (an HTTP/1.0 stream ends at the close).
func (w *conn) finish(deadline time.Time) {
	bufs := w.vec[:0]
	if len(w.lead) > 0 {
		bufs = append(bufs, w.lead)
	}
	if w.chunked {
		bufs = append(bufs, lastChunk)
	}
	if len(bufs) == 0 {
		return
	}
	w.bufs = bufs
	_ = w.SetWriteDeadline(deadline)
	_, _ = w.flush()
}
