package server

import (
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/shared/apierror"
)

// routes is a Feature with a few handlers that fail in different ways.
type routes struct{}

func (routes) Mount(root *fiber.App, api fiber.Router) {
	api.Get("/ok", func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"ok": true}) })
	api.Get("/conflict", func(c *fiber.Ctx) error { return fiber.NewError(fiber.StatusConflict, "queue full") })
	api.Get("/broken", func(c *fiber.Ctx) error { return errors.New("disk on fire") })
	api.Get("/explicit", func(c *fiber.Ctx) error { return Error(c, fiber.StatusBadRequest, "limit must be a number") })
	root.Get("/page", func(c *fiber.Ctx) error { return c.SendString("page") })
}

func TestErrorConvention(t *testing.T) {
	app := New(Options{}, routes{})
	tests := []struct {
		path    string
		status  int
		errType string // empty: not an error body
		message string
	}{
		{"/api/metrics/ok", 200, "", ""},
		{"/page", 200, "", ""},
		{"/api/metrics/conflict", 409, apierror.TypeInvalidRequest, "queue full"},
		{"/api/metrics/explicit", 400, apierror.TypeInvalidRequest, "limit must be a number"},
		{"/api/metrics/broken", 500, apierror.TypeServer, "disk on fire"},
		{"/api/metrics/missing", 404, apierror.TypeInvalidRequest, "no route GET /api/metrics/missing"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, err := app.Test(httptest.NewRequest("GET", tt.path, nil))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
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
		})
	}
}
