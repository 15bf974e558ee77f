// Package stream serves the live snapshot as server-sent events.
//
// One hub goroutine owns the timing: every Interval it checks the source's
// version and, when it moved, serialises the snapshot once and offers that
// frame to every client. A source that calls Notify on a change gets the
// leading edge too: a change after a quiet Interval goes out at once, and
// the ticker restarts from it, so closer changes still wait a full
// Interval. Each client has a single pending-frame slot, not a queue: a
// client too slow to take a frame before the next one finds only the
// newest, so a client that stops reading costs one pointer, never a
// growing buffer. A client that never drains its socket is dropped after
// WriteTimeout; one that went away is noticed at the next write, at the
// latest the keep-alive.
package stream

import (
	"bufio"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/clock"
)

// Source is what the hub streams.
type Source interface {
	// Version moves when the content changes; it must be cheap.
	Version() uint64
	// Encode returns the snapshot as JSON stamped at now, and its version.
	Encode(now time.Time) (version uint64, data []byte, err error)
}

// Options tune a Hub; zero fields take the defaults.
type Options struct {
	Interval     time.Duration // shortest gap between two frames to a client (500 ms)
	KeepAlive    time.Duration // idle time before a ": keepalive" comment (15 s)
	Retry        time.Duration // reconnect delay advised to clients (1500 ms)
	WriteTimeout time.Duration // a socket accepting nothing this long is dropped (30 s)
	Clock        clock.Clock   // clock.Real{} when nil

	onRemove func() // test hook: a client left
	onTick   func() // test hook: a tick (periodic or leading-edge) was handled
}

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = 500 * time.Millisecond
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = 15 * time.Second
	}
	if o.Retry <= 0 {
		o.Retry = 1500 * time.Millisecond
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 30 * time.Second
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return o
}

// frame is one serialised snapshot event, shared by every client.
type frame struct {
	version uint64
	data    []byte // "id: …\nevent: snapshot\ndata: …\n\n"
}

// Stats counts the hub's work, for /healthz and tests.
type Stats struct {
	Clients    int    `json:"clients"`    // connected now
	Connected  uint64 `json:"connected"`  // ever
	Encoded    uint64 `json:"encoded"`    // snapshots serialised
	Sent       uint64 `json:"sent"`       // frames written (or being written) to clients
	Skipped    uint64 `json:"skipped"`    // frames replaced before a slow client took them
	KeepAlives uint64 `json:"keepAlives"` // keep-alive comments written
	Dropped    uint64 `json:"dropped"`    // clients cut off by a failed or timed-out write
}

// Hub fans the snapshot out to stream clients.
type Hub struct {
	src  Source
	opts Options

	mu      sync.Mutex
	latest  *frame
	clients map[*client]struct{}
	seq     uint64 // ticks handled

	ticker  clock.Ticker
	changed chan struct{} // capacity 1: Notify's pending notice
	done    chan struct{}
	closed  sync.Once
	loop    sync.WaitGroup

	connected, encoded, sent, skipped, keepAlives, dropped atomic.Uint64
}

// New starts a hub streaming src. Close stops it.
func New(src Source, opts Options) *Hub {
	opts = opts.withDefaults()
	h := &Hub{
		src:     src,
		opts:    opts,
		clients: map[*client]struct{}{},
		ticker:  opts.Clock.NewTicker(opts.Interval),
		changed: make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	h.loop.Add(1)
	go h.run()
	return h
}

// Close ends every stream and stops the hub. Streams end cleanly, so a
// server shutting down is not held open by them.
func (h *Hub) Close() {
	h.closed.Do(func() {
		close(h.done)
		h.loop.Wait() // then no Reset can restart the stopped ticker
		h.ticker.Stop()
	})
}

// Stats reports the counters.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	n := len(h.clients)
	h.mu.Unlock()
	return Stats{
		Clients:    n,
		Connected:  h.connected.Load(),
		Encoded:    h.encoded.Load(),
		Sent:       h.sent.Load(),
		Skipped:    h.skipped.Load(),
		KeepAlives: h.keepAlives.Load(),
		Dropped:    h.dropped.Load(),
	}
}

// Notify tells the hub the source's version moved. It never blocks and is
// cheap enough to call on every change. Without it changes still go out,
// at the next tick.
func (h *Hub) Notify() {
	select {
	case h.changed <- struct{}{}:
	default:
	}
}

func (h *Hub) run() {
	defer h.loop.Done()
	var lastFrame time.Time // when a tick last handed a client a frame
	changed := h.changed    // nil while the next tick covers any change
	for {
		select {
		case <-h.done:
			return
		case now := <-h.ticker.C():
			// A pending notice is covered by this tick's look at the version.
			select {
			case <-h.changed:
			default:
			}
			if h.handleTick(now, false) {
				lastFrame = now
			}
			changed = h.changed
		case <-changed:
			// A change an Interval after the last frame is a tick of its
			// own (the leading edge), and the ticker restarts from it.
			// Either way the next tick picks up what changes until then,
			// so stop listening: a busy source costs one wake-up a tick.
			changed = nil
			if now := h.opts.Clock.Now(); now.Sub(lastFrame) >= h.opts.Interval {
				h.ticker.Reset(h.opts.Interval)
				if h.handleTick(now, true) {
					lastFrame = now
				}
			}
		}
	}
}

func (h *Hub) handleTick(now time.Time, leading bool) (handed bool) {
	handed = h.tick(now, leading)
	if h.opts.onTick != nil {
		h.opts.onTick()
	}
	return handed
}

// currentLocked returns the frame of the source's current version,
// serialising it only if the version moved since the last one.
func (h *Hub) currentLocked(now time.Time) (*frame, error) {
	if h.latest != nil && h.latest.version == h.src.Version() {
		return h.latest, nil
	}
	v, data, err := h.src.Encode(now)
	if err != nil {
		return nil, err
	}
	h.encoded.Add(1)
	buf := make([]byte, 0, len(data)+48)
	buf = append(buf, "id: "...)
	buf = strconv.AppendUint(buf, v, 10)
	buf = append(buf, "\nevent: snapshot\ndata: "...)
	buf = append(buf, data...) // compact JSON has no newlines
	buf = append(buf, "\n\n"...)
	h.latest = &frame{version: v, data: buf}
	return h.latest, nil
}

// tick offers the newest frame to every client due one, and a keep-alive
// to every client idle for KeepAlive. It reports whether any client was
// handed a frame.
func (h *Hub) tick(now time.Time, leading bool) (handed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	if len(h.clients) == 0 {
		return false
	}
	fr, err := h.currentLocked(now)
	if err != nil {
		fr = h.latest // keep streaming what we have; the next tick retries
	}
	for c := range h.clients {
		if c.offer(h, fr, h.seq, now, leading) {
			handed = true
		}
	}
	return handed
}

// client is one stream: its pending slot and the bookkeeping the hub
// needs to pace it.
type client struct {
	wake chan struct{} // capacity 1: a pending wake-up is enough

	mu        sync.Mutex
	pending   *frame
	keepAlive bool
	version   uint64    // newest version handed to this client
	dueTick   uint64    // the first tick that may hand it a frame
	lastSent  time.Time // when the hub last handed it anything
}

// offer hands fr to the client at tick seq if it is newer than what the
// client has and the client is due: Interval after it was last sent
// anything, or at a periodic tick, the tick after its last frame (counting
// ticks, so one that fires a little early still serves every client). A
// leading-edge tick comes between periodic ones, so only time counts then.
// It reports whether it handed the client a frame.
func (c *client) offer(h *Hub, fr *frame, seq uint64, now time.Time, leading bool) (handed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	due := now.Sub(c.lastSent) >= h.opts.Interval || !leading && seq >= c.dueTick
	switch {
	case fr != nil && fr.version > c.version && due:
		if c.pending != nil {
			h.skipped.Add(1)
		}
		c.pending, c.version, c.dueTick, c.lastSent = fr, fr.version, seq+1, now
		handed = true
	case now.Sub(c.lastSent) >= h.opts.KeepAlive:
		c.keepAlive, c.lastSent = true, now
	default:
		return
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return handed
}

// take empties the client's slot.
func (c *client) take() (*frame, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fr, ka := c.pending, c.keepAlive
	c.pending, c.keepAlive = nil, false
	return fr, ka
}

// Handler serves GET /stream.
func (h *Hub) Handler(c *fiber.Ctx) error {
	now := h.opts.Clock.Now()
	h.mu.Lock()
	fr, err := h.currentLocked(now)
	if err != nil {
		h.mu.Unlock()
		return fiber.NewError(fiber.StatusInternalServerError, "encoding the snapshot: "+err.Error())
	}
	// The opening frame stands for the coming tick, which is less than an
	// Interval away: the next frame waits for the tick after it.
	cl := &client{wake: make(chan struct{}, 1), version: fr.version, dueTick: h.seq + 2, lastSent: now}
	h.clients[cl] = struct{}{}
	h.mu.Unlock()
	h.connected.Add(1)

	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set(fiber.HeaderConnection, "keep-alive")
	c.Set("X-Accel-Buffering", "no") // let nginx pass frames straight through
	conn := c.Context().Conn()
	retry := "retry: " + strconv.FormatInt(h.opts.Retry.Milliseconds(), 10) + "\n\n"
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer h.remove(cl)
		h.sent.Add(1)
		if !h.write(conn, w, []byte(retry), fr.data) {
			return
		}
		for {
			select {
			case <-h.done:
				return
			case <-cl.wake:
			}
			next, ka := cl.take()
			switch {
			case next != nil:
				h.sent.Add(1)
				if !h.write(conn, w, next.data) {
					return
				}
			case ka:
				h.keepAlives.Add(1)
				if !h.write(conn, w, []byte(": keepalive\n\n")) {
					return
				}
			}
		}
	})
	return nil
}

// write writes and flushes parts, reporting false when the client is gone
// or its socket stayed full past WriteTimeout.
func (h *Hub) write(conn net.Conn, w *bufio.Writer, parts ...[]byte) bool {
	// The deadline is wall-clock on purpose: it guards a real socket.
	_ = conn.SetWriteDeadline(time.Now().Add(h.opts.WriteTimeout))
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			h.dropped.Add(1)
			return false
		}
	}
	if err := w.Flush(); err != nil {
		h.dropped.Add(1)
		return false
	}
	return true
}

func (h *Hub) remove(c *client) {
	h.mu.Lock()
	delete(h.clients, c)
	h.mu.Unlock()
	if h.opts.onRemove != nil {
		h.opts.onRemove()
	}
}
