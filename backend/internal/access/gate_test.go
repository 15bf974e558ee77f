package access

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

	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
)

func TestAdmits(t *testing.T) {
	both := New(Options{Token: token, ProducerToken: producer, Loopback: true})
	open := New(Options{Loopback: true})
	proxyGuarded := New(Options{Token: token, ProxyToken: "px", Loopback: true})
	tests := []struct {
		name         string
		g            *Guard
		method, path string
		auth         string
		want         bool
	}{
		{"no token set", open, "POST", "/api/metrics/events", "", true},
		{"no token sent", both, "POST", "/api/metrics/events", "", false},
		{"a wrong token", both, "POST", "/api/metrics/history", "Bearer nope", false},
		{"the token", both, "POST", "/api/metrics/history", "Bearer " + token, true},
		{"the producer token, for events", both, "POST", "/API/metrics/events/", "bearer " + producer, true},
		{"the producer token, elsewhere", both, "POST", "/api/metrics/history", "Bearer " + producer, false},
		{"the proxy asks for none", both, "POST", "/v1/chat/completions", "", true},
		{"another path", both, "POST", "/nothing", "", true},
		{"the proxy's token not sent", proxyGuarded, "POST", "/v1/chat/completions", "", false},
		{"the API's token to the proxy", proxyGuarded, "POST", "/V1/chat/completions", "Bearer " + token, false},
		{"the proxy's token", proxyGuarded, "POST", "/v1/chat/completions", "Bearer px", true},
	}
	for _, tt := range tests {
		var h fasthttp.RequestHeader
		h.SetMethod(tt.method)
		h.SetRequestURI(tt.path)
		if tt.auth != "" {
			h.Set("Authorization", tt.auth)
		}
		// The token of the route the request reaches, as the server has it.
		r, _ := server.Find(largeRoutes(), tt.method, tt.path)
		if got := tt.g.Admits(&h, r.Token); got != tt.want {
			t.Errorf("%s: Admits = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// largeRoutes take large bodies at /api/metrics/events, as ingest does.
func largeRoutes() []server.Route {
	routes := fakeRoutes()
	for i := range routes {
		if routes[i].Path == "/api/metrics/events" {
			routes[i].Body = server.LargeBody
		}
	}
	return routes
}

// A request that declares a large body to a route that takes one, without
// the token it needs, is refused before its body is read (it would be
// refused after); with the token, the body is read.
func TestLargeBodyNeedsTheToken(t *testing.T) {
	g := New(Options{Token: token, Loopback: true})
	app := server.New(server.Options{OnError: g.Refused, Guard: g}, largeRoutes()...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = server.Serve(app, ln) }()
	defer func() { _ = server.Shutdown(app) }()
	body := strings.Repeat(`{"type":"x","at":1}`+"\n", 5000) // ~100 KB, over the small limit
	tests := []struct {
		name, auth, body string
		length, status   int
	}{
		{"32 MiB declared, no token", "", "", 32 << 20, 413},
		{"100 KB, no token", "", body, len(body), 413},
		{"100 KB with the token", "Authorization: Bearer " + token + "\r\n", body, len(body), 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(conn, "POST /api/metrics/events HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-ndjson\r\n%sContent-Length: %d\r\n\r\n%s",
				self, tt.auth, tt.length, tt.body)
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			msg, _ := io.ReadAll(io.LimitReader(res.Body, 1<<10))
			if res.StatusCode != tt.status {
				t.Fatalf("status %d %s, want %d", res.StatusCode, msg, tt.status)
			}
			if tt.status == 413 && !strings.Contains(string(msg), "with the token") {
				t.Errorf("the 413 does not say why: %s", msg)
			}
		})
	}
	if got := g.Stats().TooLarge; got != 2 {
		t.Errorf("tooLarge counted %d, want 2", got)
	}
}
