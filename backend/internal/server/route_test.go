package server

import (
	"fmt"
	"io"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// Find, which decides a request's bounds from its header, finds the route
// Fiber then routes the request to, or none where Fiber has none.
func TestFindAsFiberRoutes(t *testing.T) {
	patterns := []struct{ method, path string }{
		{fiber.MethodGet, "/"},
		{fiber.MethodGet, "/metrics"},
		{fiber.MethodGet, "/metrics/"},
		{fiber.MethodGet, "/api/metrics/bench/profiles"},
		{fiber.MethodPost, "/api/metrics/bench"},
		{fiber.MethodGet, "/api/metrics/bench"},
		{fiber.MethodGet, "/api/metrics/bench/:id"},
		{fiber.MethodDelete, "/api/metrics/bench/:id"},
		{fiber.MethodGet, "/api/metrics/bench/:id/requests/:file"},
		{fiber.MethodGet, "/api/metrics/panel.js"},
		{fiber.MethodGet, "/api/metrics/panel/*"},
		{AnyMethod, "/v1/*"},
	}
	var routes []Route
	for i, p := range patterns {
		routes = append(routes, Route{Method: p.method, Path: p.path, Handler: func(c *fiber.Ctx) error { return c.SendString(strconv.Itoa(i)) }})
	}
	app := New(Options{}, routes...)
	for _, req := range []string{
		"GET /", "HEAD /", "POST /", "GET /metrics", "GET /METRICS/", "GET /metrics/x",
		"GET /api/metrics/bench/profiles", "GET /api/metrics/bench/Profiles/", "GET /api/metrics/bench",
		"POST /api/metrics/bench", "POST /api/metrics/bench/", "PUT /api/metrics/bench", "HEAD /api/metrics/bench/j1",
		"GET /api/metrics/bench/j1", "DELETE /api/metrics/bench/j1/", "GET /api/metrics/bench/j1/requests/r.ndjson",
		"GET /api/metrics/bench/j1/requests", "GET /api/metrics/bench/j1/x/y", "DELETE /api/metrics/bench",
		"GET /api/metrics/panel.js", "GET /api/metrics/panel.jsx", "GET /api/metrics/panel/", "GET /api/metrics/panel/a/b",
		"POST /v1/chat/completions", "DELETE /V1/files/f", "OPTIONS /v1/models", "GET /v1x", "GET /nothing",
	} {
		var method, path string
		fmt.Sscan(req, &method, &path)
		res, err := app.Test(httptest.NewRequest(method, path, nil))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		routed := -1
		if res.StatusCode == fiber.StatusOK {
			if method == fiber.MethodHead {
				// No body to say which: the route a GET reaches.
				res, _ = app.Test(httptest.NewRequest(fiber.MethodGet, path, nil))
				body, _ = io.ReadAll(res.Body)
			}
			routed, _ = strconv.Atoi(string(body))
		}
		found := -1
		if r, ok := Find(routes, method, path); ok {
			found = indexOf(t, routes, r)
		}
		if found != routed {
			t.Errorf("%s: Find gives route %d, Fiber routes to %d (%d %s)", req, found, routed, res.StatusCode, body)
		}
	}
	// The one difference: Fiber routes /v1 itself to /v1/*, which Find
	// leaves unbounded by it (a small body, a write timeout).
	if _, ok := Find(routes, fiber.MethodPost, "/v1"); ok {
		t.Error("Find takes /v1 for /v1/*")
	}
}

func indexOf(t *testing.T, routes []Route, r Route) int {
	t.Helper()
	for i := range routes {
		if routes[i].Method == r.Method && routes[i].Path == r.Path {
			return i
		}
	}
	t.Fatalf("Find gave a route not in the table: %s %s", r.Method, r.Path)
	return -1
}
