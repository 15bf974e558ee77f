package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// Connections that declare a large body and send little of it hold none
// of the budget: fasthttp no longer allocates what a header declares, and
// readBody takes its share only as bytes arrive.
func TestDeclaredBodyHoldsNothing(t *testing.T) {
	budget := NewBudget(1<<20, -1, nil)
	addr := serve(t, New(Options{Budget: budget}, boundedRoutes...))
	for range 16 {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		fmt.Fprintf(conn, "POST /api/metrics/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n%s", 32<<20, strings.Repeat("x", 250))
	}
	// A request after them goes through: they hold nothing it needs.
	res, _ := send(t, addr, "POST /api/metrics/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n\r\nhello")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d after 16 declared 32 MiB bodies, want 200", res.StatusCode)
	}
	if s := budget.Stats(); s.Peak > 64<<10 || s.Refused != 0 {
		t.Fatalf("budget %+v: declared bodies took a share", s)
	}
}

// A body the budget cannot cover is refused with 503 and Retry-After,
// in the API's error format, while the body that holds the budget goes
// through; every share is given back at the request's end, whether it was
// answered, refused or cut off by its client.
func TestBudgetBoundsBodiesTogether(t *testing.T) {
	const size = 1 << 20
	budget := NewBudget(size, -1, nil)
	addr := serve(t, New(Options{Budget: budget}, boundedRoutes...))
	// A declared body under the first share is read into one buffer of
	// its length: two of 600 KiB do not fit in 1 MiB.
	body := 600 << 10

	// The first body arrives in part and holds its share.
	first, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	fmt.Fprintf(first, "POST /api/metrics/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n%s", body, strings.Repeat("x", body-10))
	waitUntil(t, "the first body took no share", func() bool { return budget.Stats().Held >= int64(body-10) })

	// A second of the same size does not fit beside it.
	res, _ := send(t, addr, fmt.Sprintf("POST /api/metrics/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n%s", body, strings.Repeat("y", body)))
	msg, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" ||
		!strings.Contains(string(msg), `{"error":{"message":"the server holds 1 MiB of request bodies already`) {
		t.Fatalf("second body: %d %q (Retry-After %q), want 503 with Retry-After", res.StatusCode, msg, res.Header.Get("Retry-After"))
	}

	// The first one ends and is answered whole.
	io.WriteString(first, strings.Repeat("x", 10))
	r, err := http.ReadResponse(bufio.NewReader(first), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(r.Body)
	if r.StatusCode != http.StatusOK || string(got) != fmt.Sprint(body) {
		t.Fatalf("first body: %d %q, want 200 %d", r.StatusCode, got, body)
	}

	// A body cut off by its client gives its share back too.
	cut, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(cut, "POST /api/metrics/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n%s", body, strings.Repeat("z", body/2))
	waitUntil(t, "the cut body took no share", func() bool { return budget.Stats().Held >= int64(body/2) })
	cut.Close()
	waitUntil(t, "shares not given back", func() bool { return budget.Stats().Held == 0 })
	if s := budget.Stats(); s.Refused != 1 || s.Peak > size {
		t.Fatalf("budget %+v, want one refusal and a peak within %d", s, size)
	}
}

// A body is bounded as it arrives, whatever its header says: a chunked
// one past the limit is refused with 413 and the connection closed (what
// follows on it is the rest of that body).
func TestChunkedBodyBounded(t *testing.T) {
	addr := serve(t, New(Options{BodyLimit: 100 << 10}, boundedRoutes...))
	chunk := strings.Repeat("x", 64<<10)
	var req strings.Builder
	req.WriteString("POST /api/metrics/events HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n")
	for range 3 {
		fmt.Fprintf(&req, "%x\r\n%s\r\n", len(chunk), chunk)
	}
	req.WriteString("0\r\n\r\nGET /api/metrics/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	res, r := send(t, addr, req.String())
	msg, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(msg), "over this request's limit") {
		t.Fatalf("%d %q, want 413", res.StatusCode, msg)
	}
	if !res.Close {
		t.Error("the connection is kept after a body left unread")
	}
	if _, err := http.ReadResponse(r, nil); err == nil {
		t.Error("a request was read from inside the refused body")
	}
}

// ReadBody's reads: within the limit, a declared body in one buffer of
// its length (after the first share), any other never past limit+1.
func TestReadBodyBound(t *testing.T) {
	tests := []struct {
		n, limit, size int // size: declared, -1 unknown
		over           bool
		cap            int // the buffer's, 0: at most limit+1
	}{
		{0, 10, -1, false, 0},
		{10, 10, -1, false, 0},
		{11, 10, -1, true, 0},
		{100 << 10, 100 << 10, -1, false, 0},
		{100<<10 + 1, 100 << 10, -1, true, 0},
		{1 << 20, 100 << 10, -1, true, 0},
		{10, 10, 10, false, 11},
		{3 << 20, 32 << 20, 3 << 20, false, 3<<20 + 1},
		{32 << 20, 32 << 20, 32 << 20, false, 32<<20 + 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d of %d declared %d", tt.n, tt.limit, tt.size), func(t *testing.T) {
			app := New(Options{})
			ctx := app.AcquireCtx(&fasthttp.RequestCtx{})
			defer app.ReleaseCtx(ctx)
			b, err := ReadBody(ctx, io.LimitReader(zeros{}, int64(tt.n)), tt.limit, tt.size)
			if tt.over != (err == ErrOverLimit) || (!tt.over && (err != nil || len(b) != tt.n || cap(b) > tt.limit+1)) {
				t.Fatalf("ReadBody = %d bytes (cap %d), %v", len(b), cap(b), err)
			}
			if tt.cap != 0 && cap(b) != tt.cap {
				t.Errorf("buffer cap %d, want %d", cap(b), tt.cap)
			}
		})
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// The read deadline is the body's too: a body that stops coming is a 408.
func TestSlowBodyTimesOut(t *testing.T) {
	addr := serve(t, New(Options{ReadTimeout: 200 * time.Millisecond}, boundedRoutes...))
	res, _ := send(t, addr, "POST /api/metrics/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n"+strings.Repeat("x", 20000))
	msg, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(msg), "read timeout") {
		t.Fatalf("%d %q, want 408", res.StatusCode, msg)
	}
}
