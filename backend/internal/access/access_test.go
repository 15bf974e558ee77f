package access

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/apierror"
)

// fakeRoutes stands for the route table: changes and reads under the API,
// the standalone page and proxied routes outside it, each with the token
// its row in the table names. A change answers the body it got.
func fakeRoutes() []server.Route {
	echo := func(c *fiber.Ctx) error { return c.Send(c.Body()) }
	post := func(c *fiber.Ctx) error {
		if len(c.Body()) == 0 {
			return fiber.NewError(fiber.StatusBadRequest, "empty body")
		}
		return c.Send(c.Body())
	}
	// As the proxy reads it: the body as it came, still encoded.
	raw := func(c *fiber.Ctx) error { return c.Send(c.Request().Body()) }
	return []server.Route{
		// As ingest answers: a body of blanks is empty too.
		{Method: fiber.MethodPost, Path: "/api/metrics/events", Token: server.EventsToken, Handler: func(c *fiber.Ctx) error {
			if len(bytes.TrimSpace(c.Body())) == 0 {
				return fiber.NewError(fiber.StatusBadRequest, "empty body")
			}
			return c.Send(c.Body())
		}},
		{Method: fiber.MethodPost, Path: "/api/metrics/bench", Token: server.APIToken, Handler: post},
		// As the bench routes answer: written with server.Error, not returned.
		{Method: fiber.MethodPost, Path: "/api/metrics/history", Token: server.APIToken, Handler: func(c *fiber.Ctx) error {
			if len(c.Body()) == 0 {
				return server.Error(c, fiber.StatusBadRequest, "empty body")
			}
			if len(c.Body()) > 16 {
				return server.Error(c, fiber.StatusRequestEntityTooLarge, "over 16 bytes")
			}
			return c.Send(c.Body())
		}},
		{Method: fiber.MethodDelete, Path: "/api/metrics/bench/:id", Token: server.APIToken, Handler: echo},
		{Method: fiber.MethodDelete, Path: "/api/metrics/history/:id", Token: server.APIToken, Handler: echo},
		{Method: fiber.MethodGet, Path: "/api/metrics/snapshot", Handler: func(c *fiber.Ctx) error { return c.SendString("snapshot") }},
		{Method: fiber.MethodGet, Path: "/", Handler: func(c *fiber.Ctx) error { return c.SendString("page") }},
		{Method: fiber.MethodPost, Path: "/v1/chat/completions", Token: server.ProxyToken, Handler: raw},
		{Method: fiber.MethodPost, Path: "/v1/completions", Token: server.ProxyToken, Handler: raw},
		{Method: fiber.MethodGet, Path: "/v1/models", Token: server.ProxyToken, Handler: func(c *fiber.Ctx) error { return c.SendString("models") }},
		{Method: fiber.MethodGet, Path: "/v1/authorization", Token: server.ProxyToken, Handler: func(c *fiber.Ctx) error {
			return c.SendString("[" + c.Get("Authorization") + "]")
		}},
	}
}

const (
	token    = "s3cret"
	producer = "p-only"
	self     = "127.0.0.1:7878"
	hostPage = "http://host.test:3000"
)

type request struct {
	method, path, body string
	header             map[string]string
	host               string // self when empty
}

func do(t *testing.T, app *fiber.App, r request) (int, string, map[string]string) {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req := httptest.NewRequest(r.method, r.path, body)
	req.Host = self
	if r.host != "" {
		req.Host = r.host
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	resp, err := app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	h := map[string]string{}
	for k := range resp.Header {
		h[k] = resp.Header.Get(k)
	}
	return resp.StatusCode, string(b), h
}

func newApp(opts Options) (*fiber.App, *Guard) {
	g := New(opts)
	return server.New(server.Options{OnError: g.Refused, Guard: g}, fakeRoutes()...), g
}

func TestGuard(t *testing.T) {
	withToken := Options{Token: token, Loopback: true}
	both := Options{Token: token, ProducerToken: producer, Loopback: true}
	producerOnly := Options{ProducerToken: producer, Loopback: true}
	open := Options{Loopback: true}
	cors := Options{Token: token, Origins: []string{hostPage}, Loopback: true}
	exposed := Options{Token: token} // bound to every interface
	anyOrigin := Options{Origins: []string{hostPage, "*"}, Loopback: true}
	proxyGuarded := Options{Token: token, ProxyToken: "px", Loopback: true}
	jsonType := map[string]string{"Content-Type": "application/json"}
	ndjson := map[string]string{"Content-Type": "application/x-ndjson"}
	auth := func(v string, more ...string) map[string]string {
		h := map[string]string{"Authorization": v, "Content-Type": "application/json"}
		for i := 0; i+1 < len(more); i += 2 {
			h[more[i]] = more[i+1]
		}
		return h
	}
	tests := []struct {
		name   string
		opts   Options
		req    request
		status int
		want   string            // the body answered, when 2xx
		header map[string]string // headers the answer must carry
	}{
		// Tokens.
		{name: "no token configured: a change is open", opts: open, req: request{method: "POST", path: "/api/metrics/bench", body: `{}`, header: jsonType}, status: 200, want: `{}`},
		{name: "token required of POST /bench", opts: withToken, req: request{method: "POST", path: "/api/metrics/bench", body: `{}`, header: jsonType}, status: 401,
			header: map[string]string{"Www-Authenticate": `Bearer realm="mlx-metrics"`}},
		{name: "token required of DELETE /bench/:id", opts: withToken, req: request{method: "DELETE", path: "/api/metrics/bench/j1"}, status: 401},
		{name: "token required of a route added later", opts: withToken, req: request{method: "DELETE", path: "/api/metrics/history/h1"}, status: 401},
		{name: "token required under any case of the prefix", opts: withToken, req: request{method: "POST", path: "/API/Metrics/bench", body: `{}`, header: jsonType}, status: 401},
		{name: "token required of POST /events", opts: withToken, req: request{method: "POST", path: "/api/metrics/events", body: `{}`, header: ndjson}, status: 401},
		{name: "wrong token", opts: withToken, req: request{method: "POST", path: "/api/metrics/bench", body: `{}`, header: auth("Bearer nope")}, status: 401},
		{name: "token in another scheme", opts: withToken, req: request{method: "POST", path: "/api/metrics/bench", body: `{}`, header: auth("Basic " + token)}, status: 401},
		{name: "right token", opts: withToken, req: request{method: "POST", path: "/api/metrics/bench", body: `{}`, header: auth("Bearer " + token)}, status: 200, want: `{}`},
		{name: "scheme is case-insensitive", opts: withToken, req: request{method: "POST", path: "/api/metrics/bench", body: `{}`, header: auth("bEARER " + token)}, status: 200, want: `{}`},
		{name: "DELETE with the token", opts: withToken, req: request{method: "DELETE", path: "/api/metrics/bench/j1", header: map[string]string{"Authorization": "Bearer " + token}}, status: 200},
		{name: "reads stay open", opts: withToken, req: request{method: "GET", path: "/api/metrics/snapshot"}, status: 200, want: "snapshot"},
		{name: "the page is not guarded", opts: withToken, req: request{method: "GET", path: "/"}, status: 200, want: "page"},
		{name: "producer token opens POST /events", opts: both, req: request{method: "POST", path: "/api/metrics/events", body: `{}`, header: auth("Bearer " + producer)}, status: 200, want: `{}`},
		{name: "producer token does not open POST /bench", opts: both, req: request{method: "POST", path: "/api/metrics/bench", body: `{}`, header: auth("Bearer " + producer)}, status: 401},
		{name: "producer token does not open DELETE", opts: both, req: request{method: "DELETE", path: "/api/metrics/bench/j1", header: map[string]string{"Authorization": "Bearer " + producer}}, status: 401},
		{name: "main token opens POST /events", opts: both, req: request{method: "POST", path: "/api/metrics/events", body: `{}`, header: auth("Bearer " + token)}, status: 200, want: `{}`},
		{name: "producer token alone guards POST /bench too", opts: producerOnly, req: request{method: "POST", path: "/api/metrics/bench", body: `{}`, header: jsonType}, status: 401},
		{name: "producer token alone opens POST /events", opts: producerOnly, req: request{method: "POST", path: "/api/metrics/events", body: `{}`, header: auth("Bearer " + producer)}, status: 200, want: `{}`},

		{name: "an unauthenticated bomb is refused before it is inflated", opts: Options{Token: token, Loopback: true, MaxBody: 1 << 10},
			req: request{method: "POST", path: "/api/metrics/events", body: string(compress(t, "gzip", make([]byte, 1<<20))), header: map[string]string{"Content-Type": "application/x-ndjson", "Content-Encoding": "gzip"}}, status: 401},

		// Body types: what a page may post without a preflight is refused.
		{name: "text/plain refused", opts: open, req: request{method: "POST", path: "/api/metrics/bench", body: `{"profile":"smoke"}`, header: map[string]string{"Content-Type": "text/plain"}}, status: 415},
		{name: "form refused", opts: open, req: request{method: "POST", path: "/api/metrics/bench", body: `profile=smoke`, header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, status: 415},
		{name: "an empty POST naming text/plain refused", opts: open, req: request{method: "POST", path: "/api/metrics/bench", header: map[string]string{"Content-Type": "text/plain"}}, status: 415},
		{name: "an empty DELETE naming a type passes", opts: open, req: request{method: "DELETE", path: "/api/metrics/bench/j1", header: map[string]string{"Content-Type": "text/plain"}}, status: 200},
		{name: "a DELETE with a text/plain body refused", opts: open, req: request{method: "DELETE", path: "/api/metrics/bench/j1", body: "x", header: map[string]string{"Content-Type": "text/plain"}}, status: 415},
		{name: "no Content-Type with a body refused", opts: open, req: request{method: "POST", path: "/api/metrics/bench", body: `{}`}, status: 415},
		{name: "JSON with a charset", opts: open, req: request{method: "POST", path: "/api/metrics/bench", body: `{}`, header: map[string]string{"Content-Type": "application/json; charset=utf-8"}}, status: 200, want: `{}`},
		{name: "application/jsonl", opts: open, req: request{method: "POST", path: "/api/metrics/events", body: `{}`, header: map[string]string{"Content-Type": "application/jsonl"}}, status: 200, want: `{}`},
		{name: "application/ndjson", opts: open, req: request{method: "POST", path: "/api/metrics/events", body: `{}`, header: map[string]string{"Content-Type": "Application/NDJSON"}}, status: 200, want: `{}`},

		// Origins.
		{name: "a foreign page may not change state", opts: open, req: request{method: "POST", path: "/api/metrics/bench", body: `{}`, header: map[string]string{"Content-Type": "application/json", "Origin": "http://evil.test"}}, status: 403},
		{name: "nor with the token", opts: withToken, req: request{method: "POST", path: "/api/metrics/bench", body: `{}`, header: auth("Bearer "+token, "Origin", "http://evil.test")}, status: 403},
		{name: "nor an opaque origin", opts: open, req: request{method: "DELETE", path: "/api/metrics/bench/j1", header: map[string]string{"Origin": "null"}}, status: 403},
		{name: "this server's own page may", opts: open, req: request{method: "POST", path: "/api/metrics/bench", body: `{}`, header: map[string]string{"Content-Type": "application/json", "Origin": "http://" + self}}, status: 200, want: `{}`},
		{name: "a configured page may", opts: cors, req: request{method: "POST", path: "/api/metrics/bench", body: `{}`, header: auth("Bearer "+token, "Origin", hostPage)}, status: 200, want: `{}`,
			header: map[string]string{"Access-Control-Allow-Origin": hostPage}},
		{name: "no CORS by default", opts: open, req: request{method: "GET", path: "/api/metrics/snapshot", header: map[string]string{"Origin": hostPage}}, status: 200,
			header: map[string]string{"Access-Control-Allow-Origin": ""}},
		{name: "CORS for a configured page's read", opts: cors, req: request{method: "GET", path: "/api/metrics/snapshot", header: map[string]string{"Origin": hostPage}}, status: 200,
			header: map[string]string{"Access-Control-Allow-Origin": hostPage}},
		{name: "CORS for no other page", opts: cors, req: request{method: "GET", path: "/api/metrics/snapshot", header: map[string]string{"Origin": "http://evil.test"}}, status: 200,
			header: map[string]string{"Access-Control-Allow-Origin": ""}},
		{name: "a foreign page may still read", opts: open, req: request{method: "GET", path: "/api/metrics/snapshot", header: map[string]string{"Origin": "http://evil.test"}}, status: 200, want: "snapshot"},
		{name: "preflight allows Authorization for a configured page", opts: cors,
			req:    request{method: "OPTIONS", path: "/api/metrics/bench", header: map[string]string{"Origin": hostPage, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"}},
			status: 204, header: map[string]string{"Access-Control-Allow-Origin": hostPage, "Access-Control-Allow-Headers": "Accept,Authorization,Content-Type,Last-Event-ID"}},
		{name: "preflight answers no other page", opts: cors,
			req:    request{method: "OPTIONS", path: "/api/metrics/bench", header: map[string]string{"Origin": "http://evil.test", "Access-Control-Request-Method": "POST"}},
			status: 204, header: map[string]string{"Access-Control-Allow-Origin": ""}},

		{name: "'*' among the origins lets any page change state", opts: anyOrigin, req: request{method: "POST", path: "/api/metrics/bench", body: `{}`, header: map[string]string{"Content-Type": "application/json", "Origin": "http://evil.test"}}, status: 200, want: `{}`,
			header: map[string]string{"Access-Control-Allow-Origin": "*"}},

		// The proxy at /v1: Origin and body type, no token, no inflating.
		{name: "proxy: a foreign page may not generate", opts: open, req: request{method: "POST", path: "/v1/chat/completions", body: `{}`, header: map[string]string{"Content-Type": "application/json", "Origin": "http://evil.test"}}, status: 403},
		{name: "proxy: nor under any case of the prefix", opts: open, req: request{method: "POST", path: "/V1/chat/completions", body: `{}`, header: map[string]string{"Content-Type": "application/json", "Origin": "http://evil.test"}}, status: 403},
		{name: "proxy: text/plain refused (no preflight)", opts: open, req: request{method: "POST", path: "/v1/chat/completions", body: `{}`, header: map[string]string{"Content-Type": "text/plain"}}, status: 415},
		{name: "proxy: a form refused", opts: open, req: request{method: "POST", path: "/v1/completions", body: `prompt=x`, header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, status: 415},
		{name: "proxy: no token asked; the Authorization is the upstream's", opts: withToken, req: request{method: "POST", path: "/v1/chat/completions", body: `{}`, header: map[string]string{"Content-Type": "application/json", "Authorization": "Bearer upstream-key"}}, status: 200, want: `{}`},
		{name: "proxy: this server's own page may", opts: open, req: request{method: "POST", path: "/v1/chat/completions", body: `{}`, header: map[string]string{"Content-Type": "application/json", "Origin": "http://" + self}}, status: 200, want: `{}`},
		{name: "proxy: a configured page may", opts: cors, req: request{method: "POST", path: "/v1/chat/completions", body: `{}`, header: map[string]string{"Content-Type": "application/json", "Origin": hostPage}}, status: 200, want: `{}`},
		{name: "proxy: a foreign page may read", opts: open, req: request{method: "GET", path: "/v1/models", header: map[string]string{"Origin": "http://evil.test"}}, status: 200, want: "models"},
		// With a proxy token, every request through the proxy needs it,
		// and it is not passed on.
		{name: "proxy token: none refused", opts: proxyGuarded, req: request{method: "POST", path: "/v1/chat/completions", body: `{}`, header: jsonType}, status: 401},
		{name: "proxy token: a read refused too", opts: proxyGuarded, req: request{method: "GET", path: "/v1/models"}, status: 401},
		{name: "proxy token: another refused", opts: proxyGuarded, req: request{method: "POST", path: "/v1/chat/completions", body: `{}`, header: auth("Bearer upstream-key")}, status: 401},
		{name: "proxy token: the API's does not open it", opts: proxyGuarded, req: request{method: "POST", path: "/v1/chat/completions", body: `{}`, header: auth("Bearer " + token)}, status: 401},
		{name: "proxy token: case of the path does not matter", opts: proxyGuarded, req: request{method: "POST", path: "/V1/chat/completions", body: `{}`, header: jsonType}, status: 401},
		{name: "proxy token: it opens the proxy", opts: proxyGuarded, req: request{method: "POST", path: "/v1/chat/completions", body: `{}`, header: auth("Bearer px")}, status: 200, want: `{}`},
		{name: "proxy token: not passed on", opts: proxyGuarded, req: request{method: "GET", path: "/v1/authorization", header: auth("bearer px")}, status: 200, want: "[]"},
		{name: "proxy token: it does not open the API", opts: proxyGuarded, req: request{method: "POST", path: "/api/metrics/bench", body: `{}`, header: auth("Bearer px")}, status: 401},
		{name: "proxy: an encoded body goes on as it came", opts: open, req: request{method: "POST", path: "/v1/chat/completions", body: string(compress(t, "gzip", []byte(`{}`))), header: map[string]string{"Content-Type": "application/json", "Content-Encoding": "gzip"}}, status: 200, want: string(compress(t, "gzip", []byte(`{}`)))},

		// Host, against DNS rebinding.
		{name: "rebound name refused on loopback", opts: open, req: request{method: "GET", path: "/api/metrics/snapshot", host: "evil.test:7878"}, status: 403},
		{name: "rebound name refused for the page", opts: open, req: request{method: "GET", path: "/", host: "evil.test"}, status: 403},
		{name: "localhost", opts: open, req: request{method: "GET", path: "/", host: "localhost:7878"}, status: 200, want: "page"},
		{name: "[::1]", opts: open, req: request{method: "GET", path: "/", host: "[::1]:7878"}, status: 200, want: "page"},
		{name: "127.0.0.1 without a port", opts: open, req: request{method: "GET", path: "/", host: "127.0.0.1"}, status: 200, want: "page"},
		{name: "a configured origin's host (a reverse proxy's public name)", opts: cors, req: request{method: "GET", path: "/", host: "HOST.test:3000"}, status: 200, want: "page"},
		{name: "its host on another port is not", opts: cors, req: request{method: "GET", path: "/", host: "host.test:3001"}, status: 403},
		{name: "the proxy's same-origin change passes", opts: cors, req: request{method: "POST", path: "/api/metrics/bench", body: `{}`, host: "host.test:3000", header: auth("Bearer "+token, "Origin", hostPage)}, status: 200, want: `{}`},
		{name: "any name when not bound to loopback", opts: exposed, req: request{method: "GET", path: "/", host: "metrics.example"}, status: 200, want: "page"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app, _ := newApp(tt.opts)
			status, body, header := do(t, app, tt.req)
			if status != tt.status {
				t.Fatalf("status %d, want %d (%s)", status, tt.status, body)
			}
			for k, v := range tt.header {
				if header[k] != v {
					t.Errorf("header %s %q, want %q", k, header[k], v)
				}
			}
			if status/100 == 2 {
				if tt.want != "" && body != tt.want {
					t.Fatalf("body %q, want %q", body, tt.want)
				}
				return
			}
			if status == 204 {
				return
			}
			var e apierror.Body
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Message == "" {
				t.Fatalf("body %q is not the API's error JSON", body)
			}
		})
	}
}

// /healthz counts refusals by kind, those made before a route ran too.
func TestRefusalCounts(t *testing.T) {
	app, g := newApp(Options{Token: token, Loopback: true, MaxBody: 1 << 10})
	reqs := []request{
		{method: "POST", path: "/api/metrics/bench", body: `{}`, header: map[string]string{"Content-Type": "application/json"}},                   // 401
		{method: "POST", path: "/api/metrics/bench", header: map[string]string{"Authorization": "Bearer " + token, "Origin": "http://evil.test"}}, // 403
		{method: "GET", path: "/", host: "evil.test"}, // 403
		{method: "POST", path: "/api/metrics/bench", body: "x", header: map[string]string{"Authorization": "Bearer " + token, "Content-Type": "text/plain"}}, // 415
		{method: "PUT", path: "/api/metrics/snapshot", header: map[string]string{"Authorization": "Bearer " + token}},                                        // 405
		{method: "POST", path: "/api/metrics/bench", header: map[string]string{"Authorization": "Bearer " + token}},                                          // 400, empty
		// Answered with server.Error by the route, and a body of blanks.
		{method: "POST", path: "/api/metrics/history", header: map[string]string{"Authorization": "Bearer " + token}},                                                                    // 400, empty
		{method: "POST", path: "/api/metrics/history", body: strings.Repeat("x", 17), header: map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"}}, // 413
		{method: "POST", path: "/api/metrics/events", body: " \n\t\n", header: map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/x-ndjson"}},            // 400, blank
	}
	for _, r := range reqs {
		do(t, app, r)
	}
	want := Stats{Unauthorized: 1, Forbidden: 2, TooLarge: 1, Unsupported: 1, MethodNotAllowed: 1, EmptyBody: 3}
	if got := g.Stats(); got != want {
		t.Fatalf("stats %+v, want %+v", got, want)
	}
}

func TestIsLoopbackHost(t *testing.T) {
	tests := []struct {
		host string
		want bool
	}{
		{"127.0.0.1", true}, {"127.0.0.1:7878", true}, {"127.1.2.3:80", true},
		{"localhost", true}, {"LOCALHOST:7878", true}, {"localhost.:1", true},
		{"[::1]", true}, {"[::1]:7878", true},
		{"", false}, {"evil.test", false}, {"evil.test:7878", false}, {"localhost.evil.test", false},
		{"127.0.0.1.nip.io", false}, {"10.0.0.1:7878", false}, {"[::1]x", false}, {"[::2]:80", false},
		{"localhost:x", false}, {"127.0.0.1:7878:1", false}, {"::1", false},
	}
	for _, tt := range tests {
		if got := IsLoopbackHost(tt.host); got != tt.want {
			t.Errorf("IsLoopbackHost(%q) = %v, want %v", tt.host, got, tt.want)
		}
	}
}
