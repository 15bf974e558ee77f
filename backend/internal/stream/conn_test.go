package stream

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/cors"
)

// The hijacked stream keeps the headers the handler chain set, before and
// after the hub's handler ran (a CORS middleware sets its own before), and
// an answer a later handler changed to an error is sent as that error.
func TestHijackKeepsTheChainsResponse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before fiber.Handler
		origin string
		status int
		header map[string]string
	}{
		{
			name:   "fiber's CORS middleware, as the panel mounts it",
			before: cors.New(cors.Config{AllowOrigins: "http://host.test", AllowHeaders: "Content-Type,Accept,Last-Event-ID"}),
			origin: "http://host.test",
			status: 200,
			header: map[string]string{"Access-Control-Allow-Origin": "http://host.test", "Vary": "Origin"},
		},
		{
			name: "headers before and after",
			before: func(c *fiber.Ctx) error {
				c.Set(fiber.HeaderAccessControlAllowOrigin, "http://host.test")
				err := c.Next()
				c.Set("X-Content-Type-Options", "nosniff")
				return err
			},
			status: 200,
			header: map[string]string{
				"Access-Control-Allow-Origin": "http://host.test",
				"X-Content-Type-Options":      "nosniff",
				"Content-Type":                "text/event-stream",
				"Cache-Control":               "no-cache",
				"X-Accel-Buffering":           "no",
			},
		},
		{
			name: "refused after the handler",
			before: func(c *fiber.Ctx) error {
				_ = c.Next()
				return c.Status(403).SendString("no")
			},
			status: 403,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessWith(t, harnessConfig{before: []fiber.Handler{tc.before}})
			req, _ := http.NewRequest("GET", h.url, nil)
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			for k, v := range tc.header {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			if tc.status != 200 {
				if body, _ := io.ReadAll(resp.Body); string(body) != "no" {
					t.Errorf("body %q", body)
				}
				return
			}
			if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
				t.Errorf("transfer encoding %v, want chunked", resp.TransferEncoding)
			}
			r := &reader{t: t, resp: resp, br: bufio.NewReader(resp.Body)}
			r.next()
			r.snapshot()
		})
	}
}

// An HTTP/1.1 client gets the events as chunks, an HTTP/1.0 client
// unframed, the body ending at the close; a HEAD request gets the head
// alone. Each answer says the connection closes after it (the server
// closes a stream's connection when it ends), so no client reuses it.
func TestFramingAndHead(t *testing.T) {
	h := newHarness(t, Options{})
	for _, tc := range []struct {
		request string
		body    bool
		chunked bool
	}{
		{"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", true, true},
		{"GET /stream HTTP/1.0\r\n\r\n", true, false},
		{"HEAD /stream HTTP/1.1\r\nHost: x\r\n\r\n", false, false},
	} {
		conn, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprint(conn, tc.request)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, &http.Request{Method: strings.Fields(tc.request)[0]})
		if err != nil {
			t.Fatalf("%q: %v", tc.request, err)
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%q: status %d, %v", tc.request, resp.StatusCode, resp.Header)
		}
		if !resp.Close {
			t.Errorf("%q: the answer does not say Connection: close", tc.request)
		}
		if !tc.body {
			if b, _ := io.ReadAll(br); len(b) != 0 {
				t.Errorf("%q: a body of %d bytes", tc.request, len(b))
			}
			continue
		}
		if chunked := len(resp.TransferEncoding) != 0; chunked != tc.chunked {
			t.Errorf("%q: transfer encoding %v, want chunked %v", tc.request, resp.TransferEncoding, tc.chunked)
		}
		r := &reader{t: t, resp: resp, br: bufio.NewReader(resp.Body)}
		if it := r.next(); it.retry != "1500" {
			t.Fatalf("first block %+v", it)
		}
		r.snapshot()
	}
}

// A stream asked for while the hub closes is refused, not left hanging.
func TestClosedHubRefusesStreams(t *testing.T) {
	h := newHarness(t, Options{})
	h.hub.Close()
	resp, err := http.Get(h.url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != fiber.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", resp.StatusCode)
	}
}
