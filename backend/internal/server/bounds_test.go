package server

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// boundedRoutes takes large bodies at POST /api/metrics/events and under
// /v1, and streams at /api/metrics/stream and under /v1.
var boundedRoutes = []Route{
	{Method: fiber.MethodPost, Path: "/api/metrics/events", Body: LargeBody,
		Handler: func(c *fiber.Ctx) error { return c.SendString(fmt.Sprint(len(c.Body()))) }},
	{Method: AnyMethod, Path: "/api/metrics/stream", Streams: true, Handler: answered},
	{Method: AnyMethod, Path: "/v1/*", Body: LargeBody, Streams: true, Handler: answered},
}

func answered(*fiber.Ctx) error { return nil }

func TestBoundsConfig(t *testing.T) {
	const wt = 7 * time.Second
	b := boundsOf(append(boundedRoutes, streamRoutes(0)...), nil, 32<<20, wt)
	tests := []struct {
		uri           string
		large, stream bool
	}{
		{"/api/metrics/events", true, false},
		{"/api/metrics/events?batch=1", true, false},
		{"/api/metrics/events/", true, false},
		{"/API/Metrics/Events", true, false},
		{"/api/metrics/x/../events", true, false},
		{"/api/metrics/%65vents", true, false},
		{"http://127.0.0.1:7878/api/metrics/events", true, false},
		{"/api/metrics/eventsx", false, false},
		{"/api/metrics/stream", false, true},
		{"/v1/chat/completions", true, true},
		{"/v1/", true, true},
		{"/v1", false, false},
		{"/v1x/chat", false, false},
		{"/nothing-here", false, false},
		{"/metrics", false, false},
		{"GET /api/metrics/events", false, false},
		{"DELETE /v1/files/f", false, true},
		{"PUT /v1/files/f", true, true},
	}
	for _, tt := range tests {
		var h fasthttp.RequestHeader
		method, uri, ok := strings.Cut(tt.uri, " ")
		if !ok {
			method, uri = fiber.MethodPost, tt.uri
		}
		// Parsed, as the server has it: raw header lines, a Host among them.
		if err := h.Read(bufio.NewReader(strings.NewReader(method + " " + uri + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"))); err != nil {
			t.Fatal(err)
		}
		rc := b.config(&h)
		if limit := b.limit(&h); (limit == 32<<20) != tt.large || (!tt.large && limit != SmallBodyLimit) {
			t.Errorf("%s: body limit %d, want large %v", tt.uri, limit, tt.large)
		}
		if stream := rc.WriteTimeout == 0; stream != tt.stream || (!stream && rc.WriteTimeout != wt) {
			t.Errorf("%s: write timeout %v, want stream %v", tt.uri, rc.WriteTimeout, tt.stream)
		}
	}
}

// fasthttp allocates a body's declared length before reading it: a request
// that declares 32 MiB to a route that takes no large body is refused at
// once, its body unsent; a route that takes one reads it as before.
func TestDeclaredBodyBoundedByRoute(t *testing.T) {
	addr := serve(t, New(Options{}, boundedRoutes...))
	tests := []struct {
		name, request, status string
	}{
		{"a declared 32 MiB to no route", "POST /nothing-here HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 33554432\r\n\r\n", "413"},
		{"a declared 32 MiB to a route without large bodies", "DELETE /api/metrics/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 33554432\r\n\r\n", "413"},
		{"a body to the route that takes it", "POST /api/metrics/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 70000\r\n\r\n" + strings.Repeat("x", 70000), "200"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := send(t, addr, tt.request) // gives up before a body waited for would time out
			body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<10))
			if fmt.Sprint(res.StatusCode) != tt.status {
				t.Fatalf("answer %d %q, want %s", res.StatusCode, body, tt.status)
			}
			if tt.status == "413" && !strings.HasPrefix(string(body), `{"error":{"message":`) {
				t.Errorf("not the JSON error: %q", body)
			}
		})
	}
}
