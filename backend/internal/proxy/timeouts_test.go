package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// waitGone waits for an upstream's signal that its request was cancelled.
func waitGone(t *testing.T, gone chan struct{}, why string) {
	t.Helper()
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal(why)
	}
}

// An upstream that never sends its answer's head is let go after the head
// timeout: the client gets a 504 that says so, in the API's format.
func TestHeadTimeout(t *testing.T) {
	gone := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // net/http notices a client leaving once the body is read
		<-r.Context().Done()
		close(gone)
	}))
	defer upstream.Close()
	base, evs := startWith(t, upstream.URL, Options{HeadTimeout: 100 * time.Millisecond})
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m"}`))
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(msg), `"message":"upstream http://127.0.0.1`) ||
		!strings.Contains(string(msg), "--proxy-head-timeout") {
		t.Fatalf("%d %s, want 504 naming the head timeout", resp.StatusCode, msg)
	}
	waitGone(t, gone, "the upstream request was not cancelled")
	if ev := next(t, evs); ev.Finish != events.FinishError {
		t.Errorf("event finish %q, want error", ev.Finish)
	}
}

// An answer whose body goes quiet past the idle timeout is cut there: the
// upstream request is cancelled, the client's answer ends with what came,
// and the request counts as broken, not as cancelled by its client.
func TestIdleTimeout(t *testing.T) {
	gone := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // net/http notices a client leaving once the body is read
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: "+sseChunks[1].data+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(gone)
	}))
	defer upstream.Close()
	clk := clock.NewFake(t0)
	base, evs := startWith(t, upstream.URL, Options{Clock: clk, IdleTimeout: time.Minute})
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	if line, err := r.ReadString('\n'); err != nil || !strings.Contains(line, "Hello") {
		t.Fatalf("first event %q, %v", line, err)
	}
	// The relay waits for more under the idle timer; then a minute passes.
	// The timer is the answer's, armed at its first read, so whether the
	// relay's next read was already waiting when the clock moved is not
	// known here: a read that began after it is cut a minute later, at the
	// next move (TestIdleTimerCountsEachWait times a wait exactly).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clk.WaitForTimers(ctx, 1); err != nil {
		t.Fatal("no idle timer armed")
	}
	clk.Advance(time.Minute)
	select {
	case <-gone:
	case <-time.After(time.Second):
		clk.Advance(time.Minute)
		waitGone(t, gone, "the quiet upstream request was not cancelled")
	}
	if rest, _ := io.ReadAll(r); strings.TrimSpace(string(rest)) != "" {
		t.Errorf("after the cut: %q", rest)
	}
	if ev := next(t, evs); ev.Finish != events.FinishError {
		t.Errorf("event finish %q, want error (broken off)", ev.Finish)
	}
}

// A client that stops reading its streamed answer holds the generation no
// longer than the stall timeout once its connection's buffers are full:
// the upstream request is cancelled, as when the client leaves.
func TestStalledClientCancelsUpstream(t *testing.T) {
	gone := make(chan struct{})
	event := "data: " + `{"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"` + strings.Repeat("t", 16<<10) + `"}}]}` + "\n\n"
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		// At most 64 MiB: far past any loopback buffer.
		for range 4096 {
			if _, err := io.WriteString(w, event); err != nil {
				break
			}
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
		close(gone)
	}))
	defer upstream.Close()
	base, evs := startWith(t, upstream.URL, Options{StallTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"model":"m","stream":true}`
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	// The client reads nothing more.
	waitGone(t, gone, "the upstream of a client that stopped reading was not cancelled")
	if ev := next(t, evs); ev.Finish != events.FinishCancelled {
		t.Errorf("event finish %q, want cancelled", ev.Finish)
	}
}

// The upstream's own token, when set, is what the upstream is sent.
func TestUpstreamToken(t *testing.T) {
	got := make(chan string, 1)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
		io.WriteString(w, "{}")
	}))
	defer upstream.Close()
	base, _ := startWith(t, upstream.URL, Options{UpstreamToken: "engine-key"})
	resp, err := http.Get(base + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if a := <-got; a != "Bearer engine-key" {
		t.Fatalf("upstream saw Authorization %q", a)
	}
}

// chanReader returns what arrives on its channel, one receive a Read.
type chanReader chan []byte

func (r chanReader) Read(p []byte) (int, error) {
	b, ok := <-r
	if !ok {
		return 0, io.EOF
	}
	return copy(p, b), nil
}
func (chanReader) Close() error { return nil }

// The idle timeout counts each wait for the upstream from its own start,
// with one timer for the whole answer: a read that begins after the timer
// was armed is let go exactly the idle timeout after it began, not when
// the timer first fires; time between reads does not count; and a closed
// reader's timer cancels nothing.
func TestIdleTimerCountsEachWait(t *testing.T) {
	clk := clock.NewFake(t0)
	body := make(chanReader)
	var cause atomic.Value
	ctx, cancel := context.WithCancelCause(context.Background())
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	u := &upstreamReader{body: body, clock: clk, idle: time.Minute, stall: time.Minute,
		cancel: func(err error) { cause.Store(err); cancel(err) }, conn: server}
	reads := make(chan error)
	read := func() {
		go func() {
			_, err := u.Read(make([]byte, 64))
			reads <- err
		}()
		for u.waiting.Load() == 0 { // until the read waits
			runtime.Gosched()
		}
	}
	read()
	body <- []byte("data: 1\n\n")
	if err := <-reads; err != nil {
		t.Fatal(err)
	}
	clk.Advance(50 * time.Second) // between reads: not waiting
	read()
	clk.Advance(10 * time.Second) // the timer fires: this read has waited 10 s
	if ctx.Err() != nil {
		t.Fatalf("cancelled after a 10 s wait (%v)", cause.Load())
	}
	clk.Advance(49 * time.Second)
	if ctx.Err() != nil {
		t.Fatalf("cancelled after a 59 s wait (%v)", cause.Load())
	}
	clk.Advance(time.Second)
	if !errors.Is(context.Cause(ctx), errIdle) {
		t.Fatalf("after a 60 s wait: cause %v, want errIdle", context.Cause(ctx))
	}
	close(body)
	<-reads

	// Closed, the reader's timer is gone.
	clk2 := clock.NewFake(t0)
	body2 := make(chanReader, 1)
	body2 <- []byte("data: 1\n\n")
	u2 := &upstreamReader{body: body2, clock: clk2, idle: time.Minute, stall: time.Minute,
		cancel: func(err error) { t.Errorf("closed reader cancelled: %v", err) }, conn: server}
	if _, err := u2.Read(make([]byte, 64)); err != nil {
		t.Fatal(err)
	}
	u2.Close()
	clk2.Advance(time.Hour)
}
