package server

import (
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/shared/apierror"
)

// failing is a few routes whose handlers fail in different ways.
var failing = []Route{
	{Method: fiber.MethodGet, Path: "/api/metrics/ok", Handler: func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"ok": true}) }},
	{Method: fiber.MethodGet, Path: "/api/metrics/conflict", Handler: func(c *fiber.Ctx) error { return fiber.NewError(fiber.StatusConflict, "queue full") }},
	{Method: fiber.MethodGet, Path: "/api/metrics/broken", Handler: func(c *fiber.Ctx) error { return errors.New("disk on fire") }},
	{Method: fiber.MethodGet, Path: "/api/metrics/explicit", Handler: func(c *fiber.Ctx) error { return Error(c, fiber.StatusBadRequest, "limit must be a number") }},
	{Method: fiber.MethodGet, Path: "/api/metrics/angled", Handler: func(c *fiber.Ctx) error { return Error(c, fiber.StatusBadRequest, "send Bearer <token> & more") }},
	{Method: fiber.MethodDelete, Path: "/api/metrics/ok", Handler: func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusNoContent) }},
	{Method: fiber.MethodGet, Path: "/page", Handler: func(c *fiber.Ctx) error { return c.SendString("page") }},
}

func TestErrorConvention(t *testing.T) {
	app := New(Options{}, failing...)
	tests := []struct {
		method  string // GET when empty
		path    string
		status  int
		errType string // empty: not an error body
		message string
		allow   string // the Allow header a 405 carries
	}{
		{path: "/api/metrics/ok", status: 200},
		{path: "/page", status: 200},
		{path: "/api/metrics/conflict", status: 409, errType: apierror.TypeInvalidRequest, message: "queue full"},
		{path: "/api/metrics/explicit", status: 400, errType: apierror.TypeInvalidRequest, message: "limit must be a number"},
		{path: "/api/metrics/angled", status: 400, errType: apierror.TypeInvalidRequest, message: "send Bearer <token> & more"},
		{path: "/api/metrics/broken", status: 500, errType: apierror.TypeServer, message: "disk on fire"},
		{path: "/api/metrics/missing", status: 404, errType: apierror.TypeInvalidRequest, message: "no route GET /api/metrics/missing"},
		{path: "/api/metrics/" + strings.Repeat("a", 3000), status: 404, errType: apierror.TypeInvalidRequest,
			message: "no route GET /api/metrics/" + strings.Repeat("a", 200-len("/api/metrics/")) + "…"},
		{method: "POST", path: "/api/metrics/ok", status: 405, errType: apierror.TypeInvalidRequest,
			message: "POST is not allowed here; allowed: GET, HEAD, DELETE", allow: "GET, HEAD, DELETE"},
		{method: "PUT", path: "/api/metrics/conflict", status: 405, errType: apierror.TypeInvalidRequest,
			message: "PUT is not allowed here; allowed: GET, HEAD", allow: "GET, HEAD"},
		{method: "POST", path: "/page", status: 405, errType: apierror.TypeInvalidRequest,
			message: "POST is not allowed here; allowed: GET, HEAD", allow: "GET, HEAD"},
		{path: "/" + strings.Repeat("b", 3000), status: 404, errType: apierror.TypeInvalidRequest,
			message: "no route GET /" + strings.Repeat("b", 199) + "…"},
		{method: "POST", path: "/api/metrics/missing", status: 404, errType: apierror.TypeInvalidRequest, message: "no route POST /api/metrics/missing"},
	}
	for _, tt := range tests {
		if tt.method == "" {
			tt.method = "GET"
		}
		t.Run(tt.method+" "+clip(tt.path), func(t *testing.T) {
			resp, err := app.Test(httptest.NewRequest(tt.method, tt.path, nil))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options %q, want nosniff", got)
			}
			if got := resp.Header.Get("Allow"); got != tt.allow {
				t.Errorf("Allow %q, want %q", got, tt.allow)
			}
			if tt.errType == "" {
				return
			}
			body, _ := io.ReadAll(resp.Body)
			var got apierror.Body
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("body %q is not the error JSON: %v", body, err)
			}
			if got.Error.Type != tt.errType || got.Error.Message != tt.message {
				t.Fatalf("error %+v, want type %q message %q", got.Error, tt.errType, tt.message)
			}
			// Read by people and programs, never inlined into HTML: "<" as
			// written, not \u003c.
			if !strings.Contains(string(body), tt.message) {
				t.Errorf("body %s does not hold the message as written", body)
			}
		})
	}
}

// OnError sees every error answer: those a handler returns and those it
// writes with Error, so /healthz counts refusals whichever way they are made.
func TestOnErrorSeesEveryErrorAnswer(t *testing.T) {
	var seen []int
	app := New(Options{OnError: func(_ *fiber.Ctx, status int) { seen = append(seen, status) }}, failing...)
	for _, path := range []string{"/api/metrics/ok", "/api/metrics/conflict", "/api/metrics/explicit", "/api/metrics/missing"} {
		resp, err := app.Test(httptest.NewRequest("GET", path, nil))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	want := []int{409, 400, 404}
	if len(seen) != len(want) {
		t.Fatalf("OnError saw %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("OnError saw %v, want %v", seen, want)
		}
	}
}
