package stream

import (
	"errors"
	"net"
	"sync"
	"time"
)

// longAgo as a write deadline fails a write in progress and every later
// one: how the hub cuts a client off from another goroutine.
var longAgo = time.Unix(1, 0)

// Why no write may begin: the client was cut off (its stream is broken
// off, as a failed write), or the hub is closing (the stream ends cleanly,
// with its closing chunk).
var (
	errCutOff  = errors.New("stream: client cut off")
	errClosing = errors.New("stream: hub closing")
)

// client is one stream: its pending slot, the bookkeeping the hub needs
// to pace it, and the write in progress.
type client struct {
	wake chan struct{} // capacity 1: a pending wake-up is enough
	conn net.Conn      // the hijacked socket; nil in pacing tests

	// Under the hub's wakeMu: the client waits in the hub's wake queue;
	// it left the hub.
	queued, gone bool

	mu        sync.Mutex
	pending   *frame
	keepAlive bool
	version   uint64    // newest version handed to this client
	dueTick   uint64    // the first tick that may hand it a frame
	lastSent  time.Time // when the hub last handed it anything

	writing   *frame    // the frame being written, if the write is one
	writeLen  int       // bytes of the write in progress, 0 when none
	writeFrom time.Time // when it began, on the hub's clock
	closing   bool      // the hub is closing: no new write may begin
	closeBy   time.Time // wall-clock end of the stream's grace once closing
	cut       bool      // its socket's deadline is in the past
}

// offer hands fr to the client at tick seq if it is newer than what the
// client has and the client is due: Interval after it was last sent
// anything, or at a periodic tick, the tick after its last frame (counting
// ticks, so one that fires a little early still serves every client). A
// leading-edge tick comes between periodic ones, so only time counts then.
// It reports whether it handed the client a frame, and whether the client
// has something to write (a frame or a keep-alive) and must be woken.
func (c *client) offer(h *Hub, fr *frame, seq uint64, now time.Time, leading bool) (handed, wake bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	due := now.Sub(c.lastSent) >= h.opts.Interval || !leading && seq >= c.dueTick
	switch {
	case fr != nil && fr.version > c.version && due:
		if c.pending != nil {
			h.skipped.Add(1)
		}
		c.pending, c.version, c.dueTick, c.lastSent = fr, fr.version, seq+1, now
		return true, true
	case now.Sub(c.lastSent) >= h.opts.KeepAlive:
		c.keepAlive, c.lastSent = true, now
		return false, true
	}
	return false, false
}

// moveTo records that the client is sent fr, which may be newer than the
// frame it was handed (Hub.fresher), so that no tick hands it an older one.
func (c *client) moveTo(fr *frame) *frame {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version = max(c.version, fr.version)
	return fr
}

// inWrite reports whether a write of the client's is in progress.
func (c *client) inWrite() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writeLen > 0
}

// take empties the client's slot.
func (c *client) take() (*frame, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fr, ka := c.pending, c.keepAlive
	c.pending, c.keepAlive = nil, false
	return fr, ka
}

// begin records a write of n bytes (of fr, if it is a frame) starting at
// now; it refuses once the client is cut off (errCutOff) or the hub is
// closing (errClosing).
func (c *client) begin(fr *frame, n int, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return errCutOff
	}
	if c.closing {
		return errClosing
	}
	c.writing, c.writeLen, c.writeFrom = fr, n, now
	return nil
}

// end records that the write in progress returned, and reports whether
// the hub is closing.
func (c *client) end() (closing bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writing, c.writeLen = nil, 0
	return c.closing
}

// expire cuts the client off if its write in progress began timeout or
// more before now, reporting whether it did.
func (c *client) expire(now time.Time, timeout time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writeLen == 0 || c.cut || now.Sub(c.writeFrom) < timeout {
		return false
	}
	c.cutLocked()
	return true
}

// close lets no new write begin and gives the one in progress until
// closeBy (wall clock) to complete, so a client that reads gets its whole
// event and then the closing chunk, and one that does not is cut off then.
// Cutting the write at once would also cut a client that had read every
// byte while its writer had not yet returned from the write.
func (c *client) close(closeBy time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closing, c.closeBy = true, closeBy
	if c.writeLen > 0 && !c.cut && c.conn != nil {
		_ = c.conn.SetWriteDeadline(closeBy)
	}
}

// graceEnd is the wall-clock time the closing chunk must be written by.
func (c *client) graceEnd() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closeBy.IsZero() {
		return time.Now().Add(closeGrace)
	}
	return c.closeBy
}

func (c *client) cutLocked() {
	c.cut = true
	if c.conn != nil {
		_ = c.conn.SetWriteDeadline(longAgo)
	}
}

// held reports the frames the client holds unsent, and its bytes: the
// write in progress and the frame waiting in its slot.
func (c *client) held() (writing, pending *frame, inWrite, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n = c.writeLen
	if c.pending != nil {
		n += len(c.pending.data)
	}
	return c.writing, c.pending, c.writeLen, n
}
