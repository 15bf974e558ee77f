package stream

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

var t0 = time.UnixMilli(1_764_690_000_000)

// source is a Source whose version the test moves by hand. Each encoding
// carries the version and the time it was encoded at, padded to pad bytes.
type source struct {
	mu      sync.Mutex
	version uint64
	pad     int
	encodes int
	leadKey bool // put a member before "at"
}

func (s *source) Version() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

func (s *source) set(v uint64) {
	s.mu.Lock()
	s.version = v
	s.mu.Unlock()
}

func (s *source) Encode(now time.Time) (uint64, []byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.encodes++
	m := map[string]any{"version": s.version, "at": now.UnixMilli(), "pad": strings.Repeat("x", s.pad)}
	if s.leadKey {
		m["a0"] = true // sorts before "at"
	}
	data, err := json.Marshal(m)
	return s.version, data, err
}

func (s *source) encoded() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.encodes
}

// harness is a hub behind a real loopback server, driven by a fake clock.
type harness struct {
	t       *testing.T
	src     *source
	clk     *clock.Fake
	hub     *Hub
	url     string
	addr    string
	ticked  chan struct{}
	removed chan struct{}
	wrote   chan struct{} // a writer began a write (signals may be dropped when full)
	app     *fiber.App
}

func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	return newHarnessWith(t, harnessConfig{opts: opts})
}

// harnessConfig is what some tests change about the harness.
type harnessConfig struct {
	opts    Options
	start   time.Time       // the clock's start; t0 when zero
	sndbuf  int             // the server side's socket send buffer, when set
	before  []fiber.Handler // middleware in front of the stream route
	leadKey bool            // the source's JSON starts with another member than "at"
}

func newHarnessWith(t *testing.T, cfg harnessConfig) *harness {
	t.Helper()
	if cfg.start.IsZero() {
		cfg.start = t0
	}
	h := &harness{
		t:       t,
		src:     &source{version: 1, leadKey: cfg.leadKey},
		clk:     clock.NewFake(cfg.start),
		ticked:  make(chan struct{}),
		removed: make(chan struct{}, 1024),
		wrote:   make(chan struct{}, 1024),
	}
	opts := cfg.opts
	opts.Clock = h.clk
	opts.onTick = func() { h.ticked <- struct{}{} }
	opts.onRemove = func() { h.removed <- struct{}{} }
	opts.onWrite = func() {
		select {
		case h.wrote <- struct{}{}:
		default:
		}
	}
	h.hub = New(h.src, opts)
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	handlers := append(append([]fiber.Handler{}, cfg.before...), h.hub.Handler)
	app.Get("/stream", handlers...)
	var ln net.Listener
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.sndbuf > 0 {
		ln = smallSendBuffers{ln, cfg.sndbuf}
	}
	go func() { _ = server.Serve(app, ln) }() // as the backend serves
	h.addr = ln.Addr().String()
	h.url = "http://" + h.addr + "/stream"
	h.app = app
	t.Cleanup(func() {
		h.hub.Close()
		_ = app.ShutdownWithTimeout(5 * time.Second)
	})
	return h
}

// smallSendBuffers gives every accepted socket a small send buffer, so a
// client that does not read stalls the server's writes early.
type smallSendBuffers struct {
	net.Listener
	size int
}

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		_ = c.(*net.TCPConn).SetWriteBuffer(l.size)
	}
	return c, err
}

// advance moves the clock one tick on and waits until the hub handled it.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	done := make(chan struct{})
	go func() { h.clk.Advance(d); close(done) }()
	select {
	case <-h.ticked:
	case <-time.After(10 * time.Second):
		h.t.Fatal("hub did not tick")
	}
	<-done
}

// waitTick waits until the hub handled a tick it took without advance.
func (h *harness) waitTick() {
	h.t.Helper()
	select {
	case <-h.ticked:
	case <-time.After(10 * time.Second):
		h.t.Fatal("hub did not tick")
	}
}

// item is one parsed block of the stream.
type item struct {
	retry, id, event, comment string
	version                   uint64
	at                        int64
}

type reader struct {
	t    *testing.T
	resp *http.Response
	br   *bufio.Reader
}

func (h *harness) connect() *reader {
	h.t.Helper()
	resp, err := http.Get(h.url)
	if err != nil {
		h.t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		h.t.Fatalf("status %d content-type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	h.t.Cleanup(func() { resp.Body.Close() })
	return &reader{t: h.t, resp: resp, br: bufio.NewReader(resp.Body)}
}

// next reads one block (up to a blank line).
func (r *reader) next() item {
	r.t.Helper()
	var it item
	for {
		line, err := r.br.ReadString('\n')
		if err != nil {
			r.t.Fatalf("reading the stream: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			return it
		}
		if c, ok := strings.CutPrefix(line, ":"); ok {
			it.comment = strings.TrimSpace(c)
			continue
		}
		field, value, _ := strings.Cut(line, ": ")
		switch field {
		case "retry":
			it.retry = value
		case "id":
			it.id = value
		case "event":
			it.event = value
		case "data":
			var d struct {
				Version uint64 `json:"version"`
				At      int64  `json:"at"`
			}
			if err := json.Unmarshal([]byte(value), &d); err != nil {
				r.t.Fatalf("data is not JSON: %v", err)
			}
			it.version, it.at = d.Version, d.At
		default:
			r.t.Fatalf("unexpected line %q", line)
		}
	}
}

func (r *reader) snapshot() item {
	r.t.Helper()
	it := r.next()
	if it.event != "snapshot" || it.id != strconv.FormatUint(it.version, 10) {
		r.t.Fatalf("want a snapshot frame, got %+v", it)
	}
	return it
}

func (r *reader) keepalive() {
	r.t.Helper()
	if it := r.next(); it.comment != "keepalive" {
		r.t.Fatalf("want a keep-alive, got %+v", it)
	}
}

// The stream opens with the retry advice and the current snapshot at once.
func TestOpening(t *testing.T) {
	h := newHarness(t, Options{})
	h.src.set(7)
	r := h.connect()
	if it := r.next(); it.retry != "1500" {
		t.Fatalf("first block %+v, want retry: 1500", it)
	}
	if it := r.snapshot(); it.version != 7 || it.at != t0.UnixMilli() {
		t.Fatalf("opening frame %+v", it)
	}
	if got := r.resp.Header.Get("Cache-Control"); got != "no-cache" {
		t.Errorf("Cache-Control %q", got)
	}
}

// A burst of changes between two ticks yields one frame with the latest
// state; steady changes yield one frame a tick, never closer than Interval.
func TestThrottleCoalesces(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.connect()
	r.next()
	r.snapshot()

	for v := uint64(2); v <= 10_001; v++ {
		h.src.set(v) // 10,000 changes in no time
	}
	h.advance(500 * time.Millisecond)
	if it := r.snapshot(); it.version != 10_001 {
		t.Fatalf("after the burst got version %d, want the latest 10001", it.version)
	}

	// Three seconds of a change every 100 ms. Each frame is read before the
	// next tick: one the client has not taken by then is skipped by design.
	v := uint64(10_001)
	var frames []item
	for i := 1; i <= 30; i++ {
		v++
		h.src.set(v)
		if i%5 == 0 {
			h.advance(100 * time.Millisecond) // the ticker fires every fifth
			frames = append(frames, r.snapshot())
		} else {
			h.clk.Advance(100 * time.Millisecond)
		}
	}
	// The keep-alive after 15 idle seconds: no frame came in between.
	h.advance(15 * time.Second)
	r.keepalive()
	if len(frames) != 6 {
		t.Fatalf("%d frames in 3 s of changes, want 6 (two a second): %+v", len(frames), frames)
	}
	for i := 1; i < len(frames); i++ {
		if frames[i].version <= frames[i-1].version {
			t.Fatalf("versions out of order: %+v", frames)
		}
		if gap := frames[i].at - frames[i-1].at; gap < 500 {
			t.Fatalf("frames %d ms apart: %+v", gap, frames)
		}
	}
	if frames[5].version != v {
		t.Fatalf("last frame version %d, want %d", frames[5].version, v)
	}
	// Once per version, shared: opening + burst + 6.
	if got := h.src.encoded(); got != 8 {
		t.Errorf("encoded %d times, want 8", got)
	}
}

// With Notify, a change after a quiet Interval goes out at once; changes
// closer than an Interval to it are coalesced into one frame a full
// Interval after it, whatever the ticker's phase was.
func TestLeadingEdge(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.connect()
	r.next()
	r.snapshot()
	notify := func(v uint64) {
		h.src.set(v)
		h.hub.Notify()
	}
	expect := func(v uint64, at time.Duration) {
		t.Helper()
		if it := r.snapshot(); it.version != v || it.at != t0.Add(at).UnixMilli() {
			t.Fatalf("got version %d at %d ms, want %d at %d ms", it.version, it.at-t0.UnixMilli(), v, at.Milliseconds())
		}
	}

	h.advance(2 * time.Second)            // quiet ticks, the last at 2000 ms
	h.clk.Advance(200 * time.Millisecond) // between two ticks
	notify(2)
	h.waitTick()
	expect(2, 2200*time.Millisecond) // at once, not at the 2500 ms tick

	h.clk.Advance(100 * time.Millisecond)
	notify(3)
	h.clk.Advance(200 * time.Millisecond) // 2500 ms: the old phase ticks no more
	notify(4)
	h.advance(200 * time.Millisecond)
	expect(4, 2700*time.Millisecond) // coalesced, one Interval after 2200

	notify(5) // right after a frame: waits its Interval
	h.advance(500 * time.Millisecond)
	expect(5, 3200*time.Millisecond)

	h.advance(500 * time.Millisecond) // quiet
	h.advance(500 * time.Millisecond)
	h.clk.Advance(250 * time.Millisecond)
	notify(6)
	h.waitTick()
	expect(6, 4450*time.Millisecond)

	h.advance(15 * time.Second)
	r.keepalive() // and no other frame came
	if got := h.src.encoded(); got != 5 {
		t.Errorf("encoded %d times, want 5 (opening, 2, 4, 5, 6)", got)
	}
}

// Keep-alives come after 15 s without anything written, and not before.
func TestKeepAlive(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.connect()
	r.next()
	r.snapshot()
	for range 29 {
		h.advance(500 * time.Millisecond) // 14.5 s of silence
	}
	// A change now must come before any keep-alive.
	h.src.set(2)
	h.advance(500 * time.Millisecond)
	if it := r.snapshot(); it.version != 2 {
		t.Fatalf("got %+v", it)
	}
	for range 30 {
		h.advance(500 * time.Millisecond)
	}
	r.keepalive()
	h.src.set(3)
	h.advance(500 * time.Millisecond)
	if it := r.snapshot(); it.version != 3 {
		t.Fatalf("after the keep-alive got %+v", it)
	}
	if st := h.hub.Stats(); st.KeepAlives != 1 {
		t.Fatalf("%d keep-alives, want 1", st.KeepAlives)
	}
}

// A client that joins between ticks is not sent its next frame at the
// coming tick, less than Interval after its opening one, but at the one
// after; then at every tick.
func TestOfferPacesEachClient(t *testing.T) {
	h := &Hub{opts: Options{}.withDefaults()}
	const joinedAfterTick = 7
	c := &client{wake: make(chan struct{}, 1), version: 2, dueTick: joinedAfterTick + 2, lastSent: t0}
	for _, step := range []struct {
		seq     uint64
		at      time.Duration
		leading bool
		version uint64
		pending bool
	}{
		{8, 300 * time.Millisecond, false, 3, false}, // the coming tick
		{9, 800 * time.Millisecond, false, 3, true},
		{10, 1300 * time.Millisecond, false, 3, false}, // nothing newer
		{11, 1800 * time.Millisecond, false, 4, true},
		{12, 1900 * time.Millisecond, true, 5, false}, // leading edge, 100 ms after the last frame
		{13, 2300 * time.Millisecond, false, 5, true},
		{14, 2900 * time.Millisecond, true, 6, true},  // leading edge, 600 ms after
		{15, 3400 * time.Millisecond, false, 7, true}, // the tick after it, the ticker restarted
	} {
		c.offer(h, &frame{version: step.version}, step.seq, t0.Add(step.at), step.leading)
		got, _ := c.take()
		if (got != nil) != step.pending {
			t.Fatalf("tick %d: pending %v, want %v", step.seq, got != nil, step.pending)
		}
	}
}

// Several clients see the same frames in the same order, more of them
// than a tick wakes at once: each woken client wakes the next, or, when
// the fan-out pauses (here at every turn), the pipe's reader passes the
// turns held on.
func TestClientsShareFrames(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      Options
		minPauses uint64
	}{
		{"no pauses", Options{}, 0},
		// Each tick wakes wakeWidth clients and queues the rest: the
		// first turn passed on pauses.
		{"a pause at every turn", Options{pauseEvery: -1}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.opts)
			readers := make([]*reader, 3*wakeWidth+1)
			for i := range readers {
				readers[i] = h.connect()
				readers[i].next()
				readers[i].snapshot()
			}
			for v := uint64(2); v <= 4; v++ {
				h.src.set(v)
				h.advance(500 * time.Millisecond)
				// Read before the next tick: a frame not yet taken would be skipped.
				for i, r := range readers {
					if it := r.snapshot(); it.version != v {
						t.Fatalf("client %d got version %d, want %d", i, it.version, v)
					}
				}
			}
			st := h.hub.Stats()
			if st.Clients != len(readers) || st.Encoded != 4 {
				t.Fatalf("stats %+v, want %d clients and 4 encodings", st, len(readers))
			}
			if st.Pauses < tc.minPauses {
				t.Fatalf("stats %+v, want %d pauses at least", st, tc.minPauses)
			}
		})
	}
}

// A client that hangs up is removed at the next write.
func TestGoneClientIsCleanedUp(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.connect()
	r.next()
	r.snapshot()
	r.resp.Body.Close()
	v := uint64(1)
	for i := 0; ; i++ {
		v++
		h.src.set(v)
		h.advance(500 * time.Millisecond)
		select {
		case <-h.removed:
			if st := h.hub.Stats(); st.Clients != 0 || st.Dropped != 1 {
				t.Fatalf("stats after cleanup %+v", st)
			}
			return
		case <-time.After(50 * time.Millisecond):
			// The hang-up has not reached the server yet: write again.
		}
		if i == 200 {
			t.Fatal("the client was never cleaned up")
		}
	}
}

// Close ends every stream cleanly.
func TestCloseEndsStreams(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.connect()
	r.next()
	r.snapshot()
	h.hub.Close()
	if _, err := io.ReadAll(r.br); err != nil {
		t.Fatalf("stream did not end cleanly: %v", err)
	}
	<-h.removed
}

// rawClient opens the stream and never reads it, with a small receive
// buffer so the server's writes stall early.
func rawClient(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	if _, err := fmt.Fprintf(conn, "GET /stream HTTP/1.1\r\nHost: %s\r\n\r\n", addr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
