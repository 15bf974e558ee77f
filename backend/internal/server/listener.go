package server

import (
	"net"
	"sync"
	"sync/atomic"

	"github.com/gofiber/fiber/v2"
)

// Serve serves app on ln until Shutdown. Shutdown then waits only on
// connections that carry a request: those that have sent nothing yet are
// closed with the listener. A browser opens such connections ahead of
// need, and an HTTP client keeps one it dialed and did not use; fasthttp
// counts them as busy from the accept (net/http waits five seconds on
// them), so each would hold Shutdown to its bound.
func Serve(app *fiber.App, ln net.Listener) error {
	return app.Listener(newListener(ln))
}

func newListener(ln net.Listener) *listener {
	return &listener{Listener: ln, conns: make(map[*conn]struct{})}
}

// listener keeps the connections it accepted until they close, so that
// its Close (Shutdown's first step) can close those that are still quiet.
type listener struct {
	net.Listener
	mu     sync.Mutex
	conns  map[*conn]struct{}
	closed bool
}

func (l *listener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c := &conn{Conn: nc, l: l}
	l.mu.Lock()
	closed := l.closed
	if !closed {
		l.conns[c] = struct{}{}
	}
	l.mu.Unlock()
	if closed { // accepted as the listener closed: nothing was read
		nc.Close()
		return nil, net.ErrClosed
	}
	return c, nil
}

// Close stops accepting and closes the connections on which no byte has
// arrived. One whose first byte arrives at this moment may be cut: its
// client sees a connection closed before any answer, which clients retry.
func (l *listener) Close() error {
	err := l.Listener.Close()
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	for _, c := range l.quiet() {
		c.Close()
	}
	return err
}

// quiet lists the open connections on which no byte has arrived.
func (l *listener) quiet() []*conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	var quiet []*conn
	for c := range l.conns {
		if !c.read.Load() {
			quiet = append(quiet, c)
		}
	}
	return quiet
}

func (l *listener) forget(c *conn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
}

// conn is an accepted connection that tells whether a byte has arrived.
type conn struct {
	net.Conn
	l    *listener
	read atomic.Bool
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.read.Load() {
		c.read.Store(true)
	}
	return n, err
}

func (c *conn) Close() error {
	c.l.forget(c)
	return c.Conn.Close()
}

// NetConn is the accepted connection itself, as crypto/tls's Conn has it:
// the event streams write to the socket, whose writev sends several parts
// in one call.
func (c *conn) NetConn() net.Conn { return c.Conn }
