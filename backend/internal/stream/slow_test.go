package stream

import (
	"io"
	"testing"
	"time"
)

// waitFor polls cond, which the hub's own goroutines make true, for at
// most ten seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *harness) frameLen() int {
	h.hub.mu.Lock()
	defer h.hub.mu.Unlock()
	return len(h.hub.latest.data)
}

// Many clients that never read cost the server about one frame in all,
// not one (or fourteen) per client: each holds the shared frame it is
// writing and a pointer to the newest, and nothing is copied for it.
func TestManySlowClientsHoldOneFrame(t *testing.T) {
	const (
		frameBytes = 256 << 10
		clients    = 100 // 25 MiB of frames if each held a copy
		ticks      = 20
	)
	h := newHarnessWith(t, harnessConfig{sndbuf: 4 << 10})
	h.src.pad = frameBytes
	fast := h.connect() // a well-behaved client alongside
	fast.next()
	fast.snapshot()
	frame := h.frameLen()

	before := heapInUse()
	for range clients {
		rawClient(t, h.addr)
	}
	waitFor(t, "every slow client stuck in its opening write", func() bool {
		st := h.hub.Stats()
		return st.Clients == clients+1 && st.Writing >= clients
	})
	for v := uint64(2); v < 2+ticks; v++ {
		h.src.set(v)
		h.advance(500 * time.Millisecond)
		if it := fast.snapshot(); it.version != v {
			t.Fatalf("the fast client got %d, want %d: the slow ones held it up", it.version, v)
		}
	}
	waitFor(t, "the fast client's writes to end", func() bool { return h.hub.Stats().Writing == clients })
	st := h.hub.Stats()
	after := heapInUse()

	if st.Skipped < uint64(clients*(ticks-1)) {
		t.Errorf("skipped %d frames, want at least %d: slow clients are being queued frames", st.Skipped, clients*(ticks-1))
	}
	// One frame in the write (the opening one, plus the response head) and
	// the newest in the slot.
	if st.MaxClientBytes > 2*frame+1024 { // and the response head
		t.Errorf("one client holds %d bytes, want at most two frames (%d)", st.MaxClientBytes, 2*frame)
	}
	if st.HeldBytes > 2*frame+64 { // later versions' ids are a digit longer
		t.Errorf("clients hold %d distinct bytes, want the opening frame and the newest (%d)", st.HeldBytes, 2*frame)
	}
	// Per client: a goroutine, its bookkeeping and the server's request
	// context, a few KiB; the frames are shared.
	bound := uint64(4*frame + clients*32<<10)
	grew := int64(after) - int64(before)
	if grew > int64(bound) {
		t.Errorf("heap grew by %d bytes for %d clients and %d frames of %d bytes (bound %d)", grew, clients, ticks, frame, bound)
	}
	t.Logf("heap %+d bytes (%d per client); %+v", grew, grew/clients, st)
}

// A client whose socket has not taken a write WriteTimeout after it
// began is dropped at the first tick past it, on the hub's clock, and not
// before.
func TestStuckClientIsDropped(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
	}{
		{"default 30 s", 0},
		{"1 s", time.Second},
		{"1.2 s", 1200 * time.Millisecond}, // the tick after it: 1.5 s
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessWith(t, harnessConfig{opts: Options{WriteTimeout: tc.timeout}, sndbuf: 4 << 10})
			h.src.pad = 256 << 10
			rawClient(t, h.addr)
			<-h.wrote // the opening write began at t0
			timeout := h.hub.opts.WriteTimeout
			ticks := int((timeout + 499*time.Millisecond) / (500 * time.Millisecond))
			for range ticks - 1 {
				h.advance(500 * time.Millisecond)
			}
			if st := h.hub.Stats(); st.Clients != 1 || st.Dropped != 0 || st.Writing != 1 {
				t.Fatalf("before %v: %+v, want the client still there, writing", timeout, st)
			}
			h.advance(500 * time.Millisecond)
			select {
			case <-h.removed:
			case <-time.After(10 * time.Second):
				t.Fatal("the stuck client was not dropped")
			}
			if st := h.hub.Stats(); st.Clients != 0 || st.Dropped != 1 || st.TimedOut != 1 || st.HeldBytes != 0 {
				t.Fatalf("after %v: %+v", timeout, st)
			}
		})
	}
}

// Close returns at once even with a client stuck in a write, and ends the
// other streams cleanly.
func TestCloseCutsStuckClients(t *testing.T) {
	h := newHarnessWith(t, harnessConfig{sndbuf: 4 << 10})
	h.src.pad = 256 << 10
	r := h.connect()
	r.next()
	r.snapshot()
	rawClient(t, h.addr)
	waitFor(t, "the stuck client's write", func() bool { return h.hub.Stats().Writing == 1 })
	done := make(chan struct{})
	go func() { h.hub.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung on a stuck client")
	}
	if st := h.hub.Stats(); st.Clients != 0 || st.Dropped != 0 {
		t.Fatalf("after Close: %+v", st)
	}
	if _, err := io.ReadAll(r.br); err != nil {
		t.Fatalf("the reading client's stream did not end cleanly: %v", err)
	}
	if err := h.app.ShutdownWithTimeout(5 * time.Second); err != nil {
		t.Fatalf("server shutdown after Close: %v", err)
	}
}
