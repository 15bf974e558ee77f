package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
)

// serve runs app on a loopback port until the test ends.
func serve(t *testing.T, app *fiber.App) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = Serve(app, ln)
	}()
	t.Cleanup(func() {
		_ = shutdown(app, time.Second)
		<-done
	})
	return ln.Addr().String()
}

// send writes request, raw, on a new connection to addr and reads the
// first answer alone (a connection kept alive would hold a ReadAll); r
// reads what follows on the connection, closed when the test ends. The
// connection gives up after 10 s, well under the read timeout a request
// whose body the server waits for would hold it.
func send(t *testing.T, addr, request string) (res *http.Response, r *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	r = bufio.NewReader(conn)
	if res, err = http.ReadResponse(r, nil); err != nil {
		t.Fatal(err)
	}
	return res, r
}

// streamRoutes has one route streaming lines events, as the SSE routes do.
func streamRoutes(lines int) []Route {
	return []Route{{Method: fiber.MethodGet, Path: "/api/metrics/stream", Streams: true, Handler: func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, "text/event-stream")
		c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
			for i := 0; i < lines; i++ {
				_, _ = w.WriteString("data: x\n\n")
				if w.Flush() != nil {
					return
				}
				time.Sleep(20 * time.Millisecond) // outlast the read timeout
			}
		})
		return nil
	}}}
}

// The read timeout cuts off a client that sends its header a line at a
// time, and only applies to reading: a stream that outlasts it is not cut.
func TestReadTimeout(t *testing.T) {
	const readTimeout = 200 * time.Millisecond
	tests := []struct {
		name      string
		request   []string // sent one piece every gap
		gap       time.Duration
		wantCut   bool // the server closes the connection
		wantLines int  // else the stream carries this many events
	}{
		{name: "header dribbled past the timeout", request: strings.SplitAfter("GET /api/metrics/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: 1\r\nX-B: 2\r\nX-C: 3\r\nX-D: 4\r\nX-E: 5\r\nX-F: 6\r\nX-G: 7\r\nX-H: 8\r\nX-I: 9\r\nX-J: 10\r\n", "\r\n"), gap: 50 * time.Millisecond, wantCut: true},
		{name: "stream outlasting the timeout", request: []string{"GET /api/metrics/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"}, wantLines: 25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := New(Options{ReadTimeout: readTimeout, IdleTimeout: readTimeout}, streamRoutes(25)...)
			addr := serve(t, app)
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// A bound far past the timeout, so only a server that never cuts fails.
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			sent := make(chan struct{})
			go func() {
				defer close(sent)
				for _, piece := range tt.request {
					if _, err := io.WriteString(conn, piece); err != nil {
						return
					}
					time.Sleep(tt.gap)
				}
			}()
			got, err := io.ReadAll(conn)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the connection was still open after 10s (read %q)", got)
			}
			if tt.wantCut {
				if strings.Contains(string(got), "data:") {
					t.Fatalf("the dribbled request was served: %q", got)
				}
				return
			}
			if n := strings.Count(string(got), "data: x"); n != tt.wantLines {
				t.Fatalf("stream cut short: %d events, want %d: %q", n, tt.wantLines, got)
			}
		})
	}
}

// Shutdown returns within its bound with a half-sent request open (the
// read timeout being far longer), and with none. A connection that has
// sent nothing carries no request: it is closed, not waited on.
func TestShutdownBounded(t *testing.T) {
	tests := []struct {
		name    string
		connect bool   // a connection is open as the server shuts down
		partial string // what it sent and left hanging
		wantErr bool   // Shutdown reaches its bound
	}{
		{name: "idle server"},
		{name: "connection that sent nothing", connect: true},
		{name: "half-sent request", connect: true, partial: "POST /api/metrics/ok HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := New(Options{ReadTimeout: time.Hour, IdleTimeout: time.Hour}, failing...)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			l := newListener(ln) // Serve's, to see what it has read
			go func() { _ = app.Listener(l) }()
			// Shut down a server that serves: one begun before the
			// listener's goroutine ran waits its whole bound on a busy
			// machine.
			probe, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(probe, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
			io.ReadAll(probe) // the answer, then the server's close
			probe.Close()
			waitUntil(t, "the server kept a closed connection", func() bool { return app.Server().GetOpenConnectionsCount() == 0 })
			if tt.connect {
				conn, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				if _, err := io.WriteString(conn, tt.partial); err != nil {
					t.Fatal(err)
				}
				waitUntil(t, "the server never accepted the connection", func() bool { return app.Server().GetOpenConnectionsCount() != 0 })
				if tt.partial != "" {
					waitUntil(t, "the server never read the request", func() bool { return len(l.quiet()) == 0 })
				}
			}
			done := make(chan error, 1)
			// fasthttp looks at its connections every 100 ms: a bound
			// of several looks.
			go func() { done <- shutdown(app, time.Second) }()
			select {
			case err := <-done:
				if (err != nil) != tt.wantErr {
					t.Fatalf("shutdown: %v, want error %v", err, tt.wantErr)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("shutdown still waiting after 10s")
			}
		})
	}
}

// waitUntil polls done (the server's counts and the listener's flags have
// no notification) every 5 ms for at most 5 s, and fails with failure.
func waitUntil(t *testing.T, failure string, done func() bool) {
	t.Helper()
	for i := 0; !done(); i++ {
		if i == 1000 {
			t.Fatal(failure)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A request fasthttp cannot parse, or one no route should see (two
// Content-Length headers, an unknown method), is answered with the API's
// JSON error, which says what failed and quotes none of the request (its
// headers may carry a token); a header too large keeps its own status.
func TestUnparsableRequest(t *testing.T) {
	const secret = "Bearer SECRET-TOKEN-123"
	tests := []struct {
		name    string
		request string
		status  string
	}{
		{"negative length", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: " + secret + "\r\nContent-Length: -1\r\n\r\n", "400"},
		{"length of 20 digits", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: " + secret + "\r\nContent-Length: 99999999999999999999\r\n\r\n", "400"},
		{"two lengths", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: " + secret + "\r\nContent-Length: 2\r\ncontent-length: 7\r\n\r\n{}GET / ", "400"},
		{"an unknown method", "get /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: " + secret + "\r\n\r\n", "501"},
		{"header too large", "GET /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: " + secret + "\r\nX-Pad: " + strings.Repeat("p", 16<<10) + "\r\n\r\n", "431"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := send(t, serve(t, New(Options{})), tt.request)
			body, _ := io.ReadAll(res.Body)
			answer := fmt.Sprint(res.Header) + string(body)
			if fmt.Sprint(res.StatusCode) != tt.status || !strings.HasPrefix(string(body), `{"error":{"message":`) {
				t.Fatalf("answer %d %q, want a %s with the JSON error", res.StatusCode, body, tt.status)
			}
			if res.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("no nosniff: %v", res.Header)
			}
			if strings.Contains(answer, "SECRET") || strings.Contains(answer, "contents") {
				t.Errorf("the answer quotes the request: %q", answer)
			}
		})
	}
}
