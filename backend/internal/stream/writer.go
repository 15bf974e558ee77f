package stream

import (
	"bufio"
	"net"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// SetHeaders sets a server-sent stream's response headers: its type, not
// cached, and not buffered by a proxy in front (nginx's X-Accel-Buffering).
func SetHeaders(c *fiber.Ctx) {
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("X-Accel-Buffering", "no")
}

// Writer is one client's server-sent stream on a hijacked connection, for
// streams that are not the hub's (a job list, a job's log): each event is
// one write straight to the socket (a chunk for HTTP/1.1), with no pipe
// and no second goroutine, and each write must complete within the
// writer's timeout, so a client that stops reading is dropped instead of
// holding its goroutine and what it was sent for ever.
type Writer struct {
	c       *conn
	head    []byte // the response head, written with the first event
	timeout time.Duration
}

// Hijack takes c's connection over once the handler chain has run and
// calls serve with a Writer for it on the connection's own goroutine; the
// connection is closed when serve returns. Like the hub's, the response
// head comes from the headers the chain left (SetHeaders, CORS), and an
// answer other than 200 a later handler gave is sent as it is. timeout
// bounds each write (30 s when 0). serve runs only for a stream that
// opens; done, when not nil, runs once the connection is handed over,
// whether serve ran or not (a HEAD request, another answer), so what the
// caller took for the stream is given back either way.
func Hijack(c *fiber.Ctx, timeout time.Duration, serve func(w *Writer), done func()) {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx := c.Context()
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(nc net.Conn) {
		if done != nil {
			defer done()
		}
		w, head, ok := open(ctx, nc)
		if !ok {
			return
		}
		sw := &Writer{c: w, head: head, timeout: timeout}
		serve(sw)
		sw.close()
	})
}

// open starts a stream on a hijacked connection: it reports the writer
// and the response head to send before the first event, or false when the
// answer was sent already (not a 200, or a HEAD request).
func open(ctx *fasthttp.RequestCtx, nc net.Conn) (*conn, []byte, bool) {
	// The socket itself, whose writev takes several parts at once: under
	// fasthttp's hijack wrapper, and under server.Serve's (NetConn).
	if u, ok := nc.(interface{ UnsafeConn() net.Conn }); ok {
		nc = u.UnsafeConn()
	}
	if u, ok := nc.(interface{ NetConn() net.Conn }); ok {
		nc = u.NetConn()
	}
	resp := &ctx.Response
	if resp.StatusCode() != fiber.StatusOK {
		// A handler after the stream's answered otherwise: send that answer.
		bw := bufio.NewWriter(nc)
		if resp.Write(bw) == nil {
			_ = bw.Flush()
		}
		return nil, nil, false
	}
	w := &conn{Conn: nc, chunked: ctx.Request.Header.IsHTTP11()}
	if w.chunked {
		resp.Header.SetContentLength(-1)
	}
	// The server closes the connection when the stream ends: said, so a
	// client does not put it back in its pool and send its next request
	// on a connection that is closing.
	resp.Header.SetConnectionClose()
	head := resp.Header.Header()
	if ctx.IsHead() {
		_, _ = nc.Write(head)
		return nil, nil, false
	}
	return w, head, true
}

// Event writes one event (its whole text, ending in a blank line), and
// the response head before the first. An error means the stream is over:
// the client went away or did not take the event within the timeout.
func (w *Writer) Event(event []byte) error {
	if err := w.c.SetWriteDeadline(time.Now().Add(w.timeout)); err != nil {
		return err
	}
	w.c.prepare(w.head, event)
	w.head = nil
	_, err := w.c.flush()
	return err
}

// KeepAlive writes the keep-alive comment the hub writes, which keeps an
// idle stream open through proxies and finds out a client that went away.
func (w *Writer) KeepAlive() error { return w.Event(keepAliveComment) }

// close ends the stream with the closing chunk, if the client still reads.
func (w *Writer) close() {
	// If nothing was sent, the head goes first, so the client sees an
	// empty stream.
	w.c.lead = w.head
	w.c.finish(time.Now().Add(closeGrace))
}
