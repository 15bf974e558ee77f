// Package stream serves the live snapshot as server-sent events.
//
// One hub goroutine owns the timing: every Interval it checks the source's
// version and, when it moved, serialises the snapshot once into an
// immutable frame and offers it to every client. A source that calls
// Notify on a change gets the leading edge too: a change after a quiet
// Interval goes out at once, and the ticker restarts from it, so closer
// changes still wait a full Interval.
//
// Each client is one goroutine that owns its hijacked connection and
// writes the shared frame straight to the socket (one writev: chunk line,
// frame, CRLF), so nothing is copied per client. Each client has a single
// pending-frame slot, not a queue: a client still writing one frame when
// the next comes finds only the newest when it is done, so a client that
// stops reading holds at most the frame it is writing, never a growing
// buffer. A write that has not completed WriteTimeout after it began (on
// the hub's clock) is cut off and the client dropped; one that went away
// is noticed at the next write, at the latest the keep-alive.
//
// A tick does not wake every client at once: it wakes a few (wakeWidth),
// and each client woken wakes the next before it writes. The fan-out
// takes as long, but only a few writers are runnable at a time, so a
// request that arrives meanwhile (a POST of events) is not scheduled
// behind thousands of them. A client whose turn comes a while after the
// tick writes the source's current version if it moved meanwhile
// (fresher), so the last clients of a long fan-out are not sent what was
// current when it began; and a fan-out pauses every millisecond, so that
// a request arriving during it is read then, not at its end (pause.go).
package stream

import (
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// Source is what the hub streams.
type Source interface {
	// Version moves when the content changes; it must be cheap.
	Version() uint64
	// Encode returns the snapshot as JSON stamped at now, and its version.
	// A snapshot whose first member is "at" (a number of milliseconds) lets
	// the hub restamp the opening frame of each client without encoding
	// again; any other is encoded afresh for each client that joins.
	Encode(now time.Time) (version uint64, data []byte, err error)
}

// Options tune a Hub; zero fields take the defaults.
type Options struct {
	Interval  time.Duration // shortest gap between two frames to a client (500 ms)
	KeepAlive time.Duration // idle time before a ": keepalive" comment (DefaultKeepAlive)
	Retry     time.Duration // reconnect delay advised to clients (1500 ms)
	// WriteTimeout bounds one write: a client whose socket has not taken
	// the whole of a frame this long after the write began (on Clock,
	// checked at every tick) is cut off (30 s).
	WriteTimeout time.Duration
	Clock        clock.Clock // clock.Real{} when nil

	onRemove func() // test hook: a client left
	onTick   func() // test hook: a tick (periodic or leading-edge) was handled
	onWrite  func() // test hook: a client's writer began a write
	// pauseEvery is how long a fan-out runs between pauses (pause.go):
	// yieldEvery when 0; a test sets it below 0 to pause at every turn.
	pauseEvery time.Duration
}

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = 500 * time.Millisecond
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = DefaultKeepAlive
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
	if o.pauseEvery == 0 {
		o.pauseEvery = yieldEvery
	}
	return o
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
	TimedOut   uint64 `json:"timedOut"`   // of those, writes cut off after WriteTimeout
	// Pauses is how often a fan-out paused to let requests in (pause.go).
	Pauses uint64 `json:"pauses"`
	// Writing is the clients with a write in progress now: a client that
	// stopped reading stays in it until WriteTimeout.
	Writing int `json:"writing"`
	// HeldBytes is the frame bytes clients hold unsent (in a write or in
	// their slot), each shared frame counted once; MaxClientBytes is the
	// most one client holds. Frames are shared, never copied per client.
	HeldBytes      int `json:"heldBytes"`
	MaxClientBytes int `json:"maxClientBytes"`
}

// Hub fans the snapshot out to stream clients.
type Hub struct {
	src   Source
	opts  Options
	retry []byte // the opening "retry: …" advice

	mu     sync.Mutex
	latest *frame
	// latestAt is when latest was serialised and encodeCost about how long
	// serialising takes, on the hub's clock: what fresher weighs a new
	// frame against.
	latestAt   time.Time
	encodeCost time.Duration
	clients    map[*client]struct{}
	seq        uint64 // ticks handled
	closing    bool   // no client joins once set
	writers    sync.WaitGroup

	// wakeQ are the clients with something to write that no one has woken
	// yet (passOn).
	wakeMu sync.Mutex
	wakeQ  []*client
	pause  *pause // nil when fan-outs do not pause

	ticker  clock.Ticker
	changed chan struct{} // capacity 1: Notify's pending notice
	done    chan struct{}
	closed  sync.Once
	loop    sync.WaitGroup

	connected, encoded, sent, skipped, keepAlives, dropped, timedOut, pauses atomic.Uint64
}

// New starts a hub streaming src. Close stops it.
func New(src Source, opts Options) *Hub {
	opts = opts.withDefaults()
	h := &Hub{
		src:     src,
		opts:    opts,
		retry:   []byte("retry: " + strconv.FormatInt(opts.Retry.Milliseconds(), 10) + "\n\n"),
		clients: map[*client]struct{}{},
		ticker:  opts.Clock.NewTicker(opts.Interval),
		changed: make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	h.startPauses()
	h.loop.Add(1)
	go h.run()
	return h
}

// Close ends every stream and stops the hub; it returns once every
// client's goroutine is gone. Streams end cleanly: a write in progress
// completes, then the closing chunk is written. A client that does not
// take them within closeGrace (wall clock) is cut off, so Close takes at
// most closeGrace whatever clients do. Streams are hijacked connections:
// the server's Shutdown does not wait for them.
func (h *Hub) Close() {
	h.closed.Do(func() {
		close(h.done)
		closeBy := time.Now().Add(closeGrace)
		h.mu.Lock()
		h.closing = true
		for c := range h.clients {
			c.close(closeBy)
		}
		h.mu.Unlock()
		h.writers.Wait()
		h.stopPauses()
		h.loop.Wait() // then no Reset can restart the stopped ticker
		h.ticker.Stop()
	})
}

// Stats reports the counters.
func (h *Hub) Stats() Stats {
	st := Stats{
		Connected:  h.connected.Load(),
		Encoded:    h.encoded.Load(),
		Sent:       h.sent.Load(),
		Skipped:    h.skipped.Load(),
		KeepAlives: h.keepAlives.Load(),
		Dropped:    h.dropped.Load(),
		TimedOut:   h.timedOut.Load(),
		Pauses:     h.pauses.Load(),
	}
	held := map[*frame]struct{}{}
	h.mu.Lock()
	st.Clients = len(h.clients)
	for c := range h.clients {
		writing, pending, inWrite, n := c.held()
		if inWrite > 0 {
			st.Writing++
		}
		st.MaxClientBytes = max(st.MaxClientBytes, n)
		for _, f := range []*frame{writing, pending} {
			if _, ok := held[f]; f != nil && !ok {
				held[f] = struct{}{}
				st.HeldBytes += len(f.data)
			}
		}
	}
	h.mu.Unlock()
	return st
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
	h.latest = newFrame(v, data)
	h.latestAt, h.encodeCost = now, encodeCost(h.encodeCost, h.opts.Clock.Now().Sub(now))
	return h.latest, nil
}

// encodeCost is the cost to note for an encoding whose wall time was took,
// prev being the cost noted before: at most twice prev, since on busy
// cores most of the wall time of an encoding preempted half-way is waiting.
func encodeCost(prev, took time.Duration) time.Duration {
	if prev <= 0 {
		return took
	}
	return min(took, 2*prev)
}

// refreshAge is the youngest a frame may be when fresher replaces it.
const refreshAge = 2 * time.Millisecond

// fresher returns the frame a client should write in place of fr, the one
// a tick handed it: a frame of the source's current version when the
// source moved since fr and the newest frame is refreshAge old or more
// (and ten encodings old, so that serialising stays a small share of a
// fan-out), else the newest frame there is. A client far down a long
// fan-out thus writes what is current when its turn comes, not what was
// current at the tick, and the frames it is sent stay an Interval apart.
func (h *Hub) fresher(fr *frame) *frame {
	if fr.version == h.src.Version() {
		return fr
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	latest := h.latest
	if now := h.opts.Clock.Now(); now.Sub(h.latestAt) >= max(refreshAge, 10*h.encodeCost) {
		if f, err := h.currentLocked(now); err == nil {
			latest = f
		}
	}
	if latest != nil && latest.version > fr.version {
		return latest
	}
	return fr
}

// tick cuts off writes older than WriteTimeout, then offers the newest
// frame to every client due one, and a keep-alive to every client idle
// for KeepAlive. It reports whether any client was handed a frame.
func (h *Hub) tick(now time.Time, leading bool) (handed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	if len(h.clients) == 0 {
		return false
	}
	for c := range h.clients {
		if c.expire(now, h.opts.WriteTimeout) {
			h.timedOut.Add(1)
		}
	}
	fr, err := h.currentLocked(now)
	if err != nil {
		fr = h.latest // keep streaming what we have; the next tick retries
	}
	for c := range h.clients {
		got, wake := c.offer(h, fr, h.seq, now, leading)
		handed = handed || got
		if wake {
			h.enqueue(c)
		}
	}
	h.beginFanOut(now)
	h.passOn(wakeWidth)
	return handed
}

// wakeWidth is how many clients a tick wakes at once. The rest wait in
// the wake queue, and each client woken wakes the next before it writes:
// a few writers are runnable at a time instead of every client, so a
// request that arrives during the fan-out (a POST of events) is not
// scheduled behind thousands of writers. The fan-out takes as long: the
// writes are the cost, and a few keep both cores busy.
var wakeWidth = max(4, 2*runtime.GOMAXPROCS(0))

// enqueue puts c in the wake queue, once.
func (h *Hub) enqueue(c *client) {
	h.wakeMu.Lock()
	defer h.wakeMu.Unlock()
	if !c.queued && !c.gone {
		c.queued = true
		h.wakeQ = append(h.wakeQ, c)
	}
}

// passOn wakes the next n clients of the wake queue, counting only those
// that will pass on in turn: a client already in a write (a slow reader)
// is woken too but not counted, as it passes on only when its write ends,
// and one whose earlier wake-up is still pending passes on once, for that.
func (h *Hub) passOn(n int) {
	h.wakeMu.Lock()
	defer h.wakeMu.Unlock()
	h.passOnLocked(n)
}

// passOnLocked is passOn with wakeMu held.
func (h *Hub) passOnLocked(n int) {
	for n > 0 && len(h.wakeQ) > 0 {
		c := h.wakeQ[0]
		h.wakeQ[0] = nil
		h.wakeQ = h.wakeQ[1:]
		c.queued = false
		if c.gone {
			continue
		}
		select {
		case c.wake <- struct{}{}:
			if !c.inWrite() {
				n--
			}
		default:
		}
	}
}

func (h *Hub) remove(c *client) {
	h.mu.Lock()
	delete(h.clients, c)
	h.mu.Unlock()
	h.wakeMu.Lock()
	c.gone = true
	h.wakeMu.Unlock()
	h.writers.Done()
	if h.opts.onRemove != nil {
		h.opts.onRemove()
	}
}
