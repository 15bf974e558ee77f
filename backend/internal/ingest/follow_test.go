package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// The follower reads SSE and NDJSON, counts bad lines, and reconnects with
// a doubling, capped backoff that starts from the server's retry advice.
func TestFollowerReconnects(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		switch conns.Add(1) {
		case 1:
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "retry: 1000\n\ndata: %s\n\ndata: %s\n\n: c\n\ndata: %s\n\n", okLine, badNeg, okOther)
		case 2, 3:
			http.Error(w, "busy", http.StatusServiceUnavailable)
		default:
			w.Header().Set("Content-Type", "application/x-ndjson")
			fmt.Fprintf(w, "%s\n", schedAt(t0+1))
			w.(http.Flusher).Flush()
			<-r.Context().Done() // stay connected until the follower leaves
		}
	}))
	defer srv.Close()

	b := bus.New()
	got := make(chan events.Event, 16)
	defer b.Subscribe("sink", 64, func(ev events.Event) { got <- ev })()
	clk := clock.NewFake(time.UnixMilli(t0))
	f := NewFollower(b, srv.URL, FollowerOptions{Options: Options{Clock: clk, Logger: testLogger(t)}, Token: "tok", MaxBackoff: 3 * time.Second})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // before srv.Close, which waits for the follower's connection
	done := make(chan struct{})
	go func() { f.Run(ctx); close(done) }()

	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	for i, want := range []int64{1000, 2000, 3000} {
		if err := clk.WaitForSleepers(wctx, 1); err != nil {
			t.Fatalf("backoff %d never started", i)
		}
		if st := f.Status(); st.NextRetryMs != want || st.Connected {
			t.Fatalf("backoff %d: status %+v, want next retry %d ms", i, st, want)
		}
		clk.Advance(time.Duration(want) * time.Millisecond)
	}
	for i, want := range []events.Type{events.TypeSchedulerSample, "catalog.changed", events.TypeSchedulerSample} {
		select {
		case ev := <-got:
			if ev.Type != want {
				t.Fatalf("event %d is %s, want %s", i, ev.Type, want)
			}
		case <-wctx.Done():
			t.Fatalf("event %d never arrived", i)
		}
	}
	st := f.Status()
	if st.Connects != 2 || st.Failures != 3 || st.Events.Accepted != 2 || st.Events.Ignored != 1 || st.Events.Rejected != 1 {
		t.Fatalf("status %+v", st)
	}
	if st.Events.LastRejection == nil || st.Events.LastRejection.Field != "weightsBytes" {
		t.Fatalf("last rejection %+v", st.Events.LastRejection)
	}
	cancel()
	<-done
}

func writeFile(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.ndjson")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const t0 = 1_764_690_000_000

func schedAt(at int64) string {
	return fmt.Sprintf(`{"type":"scheduler.sample","at":%d,"data":{"model":"m","active":1,"capacity":8,"queued":0,"tokensPerSecond":10}}`, at)
}

// Replay delivers every event of a large file without overrunning a
// subscriber's bounded queue, and counts the bad lines.
func TestReplay(t *testing.T) {
	lines := []string{"not json", badNeg}
	for i := int64(1); i <= 5000; i++ {
		lines = append(lines, schedAt(1_764_690_000_000+i))
	}
	path := writeFile(t, lines...)
	b := bus.New()
	var n atomic.Int64
	defer b.Subscribe("sink", 2*replayBatch, func(events.Event) { n.Add(1) })()
	c := NewSource("replay", b, Recorded, Options{Logger: testLogger(t)})
	if err := Replay(context.Background(), path, c, 0); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 5000 || b.Stats()[0].Dropped != 0 {
		t.Fatalf("delivered %d, stats %+v", n.Load(), b.Stats())
	}
	if st := c.Stats(); st.Accepted != 5000 || st.Rejected != 2 {
		t.Fatalf("counter %+v", st)
	}
	if err := Replay(context.Background(), filepath.Join(t.TempDir(), "missing"), c, 0); err == nil {
		t.Fatal("a missing file replayed")
	}
}

// A replay stops when its context ends: at once at full speed, and a
// cancelled one publishes nothing more.
func TestReplayCancelled(t *testing.T) {
	var lines []string
	for i := int64(1); i <= 5000; i++ {
		lines = append(lines, schedAt(1_764_690_000_000+i))
	}
	path := writeFile(t, lines...)
	b := bus.New()
	var n atomic.Int64
	defer b.Subscribe("sink", 2*replayBatch, func(events.Event) { n.Add(1) })()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := NewSource("replay", b, Recorded, Options{Logger: testLogger(t)})
	if err := Replay(ctx, path, c, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if n.Load() != 0 || c.Stats().Accepted != 0 {
		t.Fatalf("published %d, counted %+v after the cancel", n.Load(), c.Stats())
	}
}

// At speed s, replay keeps the recorded gaps divided by s.
func TestReplayPaced(t *testing.T) {
	path := writeFile(t, schedAt(t0), schedAt(t0+1000), schedAt(t0+1000), schedAt(t0+5000))
	b := bus.New()
	got := make(chan int64, 8)
	defer b.Subscribe("sink", 64, func(ev events.Event) { got <- ev.At })()
	clk := clock.NewFake(time.UnixMilli(t0))
	c := NewSource("replay", b, Recorded, Options{Clock: clk, Logger: testLogger(t)})
	done := make(chan error, 1)
	go func() { done <- Replay(context.Background(), path, c, 2) }()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	expect := func(at int64) {
		t.Helper()
		select {
		case g := <-got:
			if g != at {
				t.Fatalf("got event at %d, want %d", g, at)
			}
		case <-ctx.Done():
			t.Fatalf("event at %d never came", at)
		}
	}
	expect(t0)
	for _, step := range []struct {
		gap  time.Duration
		next []int64
	}{
		{500 * time.Millisecond, []int64{t0 + 1000, t0 + 1000}}, // 1 s at double speed
		{2 * time.Second, []int64{t0 + 5000}},
	} {
		if err := clk.WaitForSleepers(ctx, 1); err != nil {
			t.Fatal("replay never paused")
		}
		clk.Advance(step.gap - time.Millisecond)
		if clk.Sleepers() != 1 {
			t.Fatal("replay resumed early")
		}
		clk.Advance(time.Millisecond)
		for _, at := range step.next {
			expect(at)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A connection that goes silent is dropped after IdleTimeout and retried.
func TestFollowerIdleTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // silent: no events, no keep-alives
	}))
	defer srv.Close()
	clk := clock.NewFake(time.UnixMilli(t0))
	f := NewFollower(bus.New(), srv.URL, FollowerOptions{Options: Options{Clock: clk, Logger: testLogger(t)}, IdleTimeout: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Run(ctx); close(done) }()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := clk.WaitForSleepers(wctx, 1); err != nil {
		t.Fatal("the silent connection was never dropped")
	}
	if st := f.Status(); !strings.Contains(st.LastError, "nothing received for 50ms") || st.Connects != 1 {
		t.Fatalf("status %+v", st)
	}
	cancel()
	<-done
}

// roundTripper answers every request with the response its func makes.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// endlessHost is a client whose every GET is answered with body, as
// NDJSON, by a transport that ignores the request's context: only the
// follower's own reads can notice a stop.
func endlessHost(body io.Reader) *http.Client {
	return &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Status: "200 OK", Request: r, Body: io.NopCloser(body),
			Header: http.Header{"Content-Type": {"application/x-ndjson"}}}, nil
	})}
}

// A host whose array holds an element that never ends: the follower keeps
// the events before it, reads no more than the element's bound, and drops
// the connection with the reason.
func TestFollowerHugeArrayElement(t *testing.T) {
	body := &endless{prefix: "[" + okLine + `,{"type":"catalog.changed","at":1,"pad":"`, fill: 'A'}
	clk := clock.NewFake(time.UnixMilli(t0))
	f := NewFollower(bus.New(), "http://host/events", FollowerOptions{
		Options: Options{Clock: clk, Logger: testLogger(t)}, Client: endlessHost(body)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := clk.WaitForSleepers(wctx, 1); err != nil {
		t.Fatal("the connection was never dropped")
	}
	st := f.Status()
	const reason = "JSON array element 1 is over the 65536-byte limit for one event: the rest of the array is not read"
	if st.LastError != reason || st.Connects != 1 || st.Events.Accepted != 1 {
		t.Fatalf("status %+v, want the error %q after 1 event", st, reason)
	}
	if bound := maxElementRead + 64<<10; body.read > bound {
		t.Fatalf("read %d bytes of the body, over %d", body.read, bound)
	}
}

// A stop is noticed inside a body that never ends (here an NDJSON line
// the decoder skips without holding), even from a transport that does not
// end the body when the request is cancelled.
func TestFollowerStopsInsideEndlessBody(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := &cancelAfter{r: &endless{prefix: okLine + "\n", fill: 'A'}, n: 1 << 20, cancel: cancel}
	clk := clock.NewFake(time.UnixMilli(t0))
	f := NewFollower(bus.New(), "http://host/events", FollowerOptions{
		Options: Options{Clock: clk, Logger: testLogger(t)}, Client: endlessHost(body)})
	done := make(chan struct{})
	go func() { f.Run(ctx); close(done) }()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	select {
	case <-done:
	case <-wctx.Done():
		t.Fatal("the follower did not stop")
	}
	if st := f.Status(); st.Events.Accepted != 1 || st.Events.Rejected != 0 {
		t.Fatalf("status %+v", st)
	}
}

// cancelAfter calls cancel once n bytes have been read through it.
type cancelAfter struct {
	r      io.Reader
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.n -= n; c.n <= 0 {
		c.cancel()
	}
	return n, err
}
