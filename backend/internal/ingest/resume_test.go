package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/events"
)

func requestAt(at int64, id string) string {
	return fmt.Sprintf(`{"type":"request.finished","at":%d,"model":"m","requestId":%q,"finish":"stop","promptTokens":1,"cachedPromptTokens":0,"completionTokens":1,"queueMs":null,"ttftMs":1,"prefillTokensPerSecond":null,"decodeTokensPerSecond":null,"totalMs":2}`, at, id)
}

// A host that replays its whole stream from the start on every connection
// (with or without SSE ids, numbered per connection or not) has each of its
// requests counted once, also when its history outgrows the dedupe window;
// the follower sends back the last id it saw.
func TestFollowerResumesWithoutDoubleCounting(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sse    bool
		ids    func(conn, i int) string // "" for no id: field
		window int                      // DedupeWindow when 0
	}{
		{name: "SSE with stable ids", sse: true, ids: func(_, i int) string { return fmt.Sprint(i + 1) }},
		{name: "SSE with ids renumbered per connection", sse: true, ids: func(conn, i int) string { return fmt.Sprintf("c%d-%d", conn, i) }},
		{name: "SSE without ids", sse: true, ids: func(int, int) string { return "" }},
		{name: "NDJSON", ids: func(int, int) string { return "" }},
		// The host replays 10 requests; the follower remembers 3.
		{name: "SSE with stable ids, history over the window", sse: true, ids: func(_, i int) string { return fmt.Sprint(i + 1) }, window: 3},
		{name: "SSE without ids, history over the window", sse: true, ids: func(int, int) string { return "" }, window: 3},
		{name: "NDJSON, history over the window", ids: func(int, int) string { return "" }, window: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu        sync.Mutex
				conns     int
				lastIDs   []string
				published int // events the host has produced so far
			)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				conns++
				conn := conns
				lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
				published += 2 // two new requests finished since the last connection
				n := published
				mu.Unlock()
				if tc.sse {
					w.Header().Set("Content-Type", "text/event-stream")
				} else {
					w.Header().Set("Content-Type", "application/x-ndjson")
				}
				for i := range n { // from the start, every time
					line := requestAt(t0+int64(i), fmt.Sprintf("r%d", i))
					switch {
					case !tc.sse:
						fmt.Fprintln(w, line)
					case tc.ids(conn, i) != "":
						fmt.Fprintf(w, "id: %s\ndata: %s\n\n", tc.ids(conn, i), line)
					default:
						fmt.Fprintf(w, "data: %s\n\n", line)
					}
				}
				// Ends the connection: the follower reconnects.
			}))
			defer srv.Close()

			b := bus.New()
			var (
				smu  sync.Mutex
				seen = map[string]int{}
			)
			defer b.Subscribe("sink", 1024, func(ev events.Event) {
				if p, ok := ev.Payload.(*events.RequestFinished); ok {
					smu.Lock()
					seen[p.RequestID]++
					smu.Unlock()
				}
			})()
			clk := clock.NewFake(time.UnixMilli(t0))
			f := NewFollower(b, srv.URL, FollowerOptions{Options: Options{Clock: clk, Logger: testLogger(t)}})
			if tc.window > 0 {
				f.seen = newSeenSet(tc.window)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { f.Run(ctx); close(done) }()
			wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer wcancel()
			for range 4 { // four connections: the fifth waits on the backoff
				if err := clk.WaitForSleepers(wctx, 1); err != nil {
					t.Fatal("the follower never backed off")
				}
				clk.Advance(time.Minute)
			}
			if err := clk.WaitForSleepers(wctx, 1); err != nil {
				t.Fatal("the follower never backed off")
			}
			cancel()
			<-done
			b.Flush()

			mu.Lock()
			defer mu.Unlock()
			smu.Lock()
			defer smu.Unlock()
			if len(seen) != published {
				t.Errorf("%d distinct requests published, the host made %d", len(seen), published)
			}
			for id, n := range seen {
				if n != 1 {
					t.Errorf("request %s counted %d times", id, n)
				}
			}
			if st := f.Status(); st.Events.Accepted != uint64(published) || st.Duplicates == 0 ||
				(st.BeyondWindow > 0) != (tc.window > 0) {
				t.Errorf("status %+v", st)
			}
			if lastIDs[0] != "" {
				t.Errorf("first connection sent Last-Event-ID %q", lastIDs[0])
			}
			if tc.sse && tc.ids(1, 0) != "" {
				if want := tc.ids(len(lastIDs)-1, published-3); lastIDs[len(lastIDs)-1] != want {
					t.Errorf("Last-Event-ID on reconnect %q, want %q (all %q)", lastIDs[len(lastIDs)-1], want, lastIDs)
				}
			}
		})
	}
}

// A source logs its first rejection at once, then at most one line per
// LogEvery with the count since, written when the interval ends even if
// nothing follows.
func TestRejectionLogIsPaced(t *testing.T) {
	clk := clock.NewFake(time.UnixMilli(t0))
	var lines []string
	src := NewSource("POST /events", bus.New(), Live, Options{Clock: clk, LogEvery: time.Minute,
		Logger: logging.Func(func(_ slog.Level, msg string) { lines = append(lines, msg) })})
	for _, step := range []struct {
		advance time.Duration
		rejects int
		lines   int
	}{
		{0, 1, 1},              // the first, at once
		{time.Second, 50, 1},   // a burst: counted, not logged
		{time.Minute, 1, 2},    // the interval ended: one line with the count
		{time.Second, 1000, 2}, // and quiet again
		{time.Minute, 0, 3},    // then silence: the interval's end writes the count
	} {
		clk.Advance(step.advance)
		for range step.rejects {
			src.reject(Rejection{Line: 3, Field: "at", Reason: "bad"})
		}
		if len(lines) != step.lines {
			t.Fatalf("after %d more rejections: %d log lines, want %d: %q", step.rejects, len(lines), step.lines, lines)
		}
	}
	if !strings.Contains(lines[0], "POST /events: rejected an event: line 3: at: bad") ||
		!strings.Contains(lines[1], "50 more events rejected in the last 1 min 00 s") ||
		!strings.Contains(lines[2], "1001 more events rejected in the last 1 min 00 s") {
		t.Errorf("log lines %q", lines)
	}
	if st := src.Stats(); st.Rejected != 1052 {
		t.Errorf("counted %d", st.Rejected)
	}
}

// A source that ends logs the count it has not logged yet: a replay at its
// end, a follower when stopped, POST /events when serve closes it.
func TestSourcesLogPendingWhenTheyEnd(t *testing.T) {
	// Past the allowed skew, and three events, not one sent thrice (which
	// a follower drops as repeats).
	bad := func(i int64) string { return schedAt(t0 + time.Hour.Milliseconds() + i) }
	tests := []struct {
		name string
		run  func(t *testing.T, b *bus.Bus, opts Options) // three rejections, then the source ends
	}{
		{"replay", func(t *testing.T, b *bus.Bus, opts Options) {
			if err := Replay(context.Background(), writeFile(t, bad(1), bad(2), bad(3)), NewSource("replay", b, Recorded, opts), 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"follow", func(t *testing.T, b *bus.Bus, opts Options) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/x-ndjson")
				fmt.Fprintf(w, "%s\n%s\n%s\n%s\n", bad(1), bad(2), bad(3), schedAt(t0))
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			}))
			defer srv.Close()
			read := make(chan struct{}, 1)
			defer b.Subscribe("sink", 4, func(events.Event) { read <- struct{}{} })()
			f := NewFollower(b, srv.URL, FollowerOptions{Options: opts})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { f.Run(ctx); close(done) }()
			<-read // the good line after the three bad ones
			cancel()
			<-done
		}},
		{"POST /events", func(t *testing.T, b *bus.Bus, opts Options) {
			h := NewHTTP(b, opts)
			post(t, b, h, server.Options{}, bad(1)+"\n"+bad(2)+"\n"+bad(3), "")
			h.FlushLog()
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu    sync.Mutex
				lines []string
			)
			opts := Options{Clock: clock.NewFake(time.UnixMilli(t0)), Logger: logging.Func(func(_ slog.Level, msg string) {
				mu.Lock()
				lines = append(lines, msg)
				mu.Unlock()
			})}
			tc.run(t, bus.New(), opts)
			mu.Lock()
			defer mu.Unlock()
			if len(lines) != 2 || !strings.Contains(lines[1], "2 more events rejected in the last 0.0 ms") {
				t.Errorf("log lines %q, want the first rejection and then the other two counted", lines)
			}
		})
	}
}
