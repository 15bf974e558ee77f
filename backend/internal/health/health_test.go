package health

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

func TestHealthz(t *testing.T) {
	start := time.UnixMilli(1_764_690_000_000)
	now := start.Add(90 * time.Second)
	h := New(start, Options{Clock: clock.NewFake(now)})
	h.Add("gpu", func() any { return map[string]any{"lease": "free"} })
	h.Add("bus", func() any { return []int{1} })
	app := server.New(server.Options{},
		server.Route{Method: fiber.MethodGet, Path: "/healthz", Handler: h.Handle},
		server.Route{Method: fiber.MethodGet, Path: server.APIPrefix + "/healthz", Handler: h.Handle})

	for _, path := range []string{"/healthz", "/api/metrics/healthz"} {
		t.Run(path, func(t *testing.T) {
			resp, err := app.Test(httptest.NewRequest("GET", path, nil))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			var got map[string]any
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			for k, want := range map[string]any{
				"status":    "ok",
				"startedAt": float64(start.UnixMilli()),
				"at":        float64(now.UnixMilli()),
				"uptimeMs":  float64(90_000),
			} {
				if got[k] != want {
					t.Errorf("%s = %v, want %v", k, got[k], want)
				}
			}
			if gpu, ok := got["gpu"].(map[string]any); !ok || gpu["lease"] != "free" {
				t.Errorf("gpu section = %v", got["gpu"])
			}
			if _, ok := got["bus"].([]any); !ok {
				t.Errorf("bus section = %v", got["bus"])
			}
		})
	}
}

func TestAddReservedPanics(t *testing.T) {
	for _, name := range []string{"status", "uptimeMs", "at", "startedAt"} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatalf("Add(%q) did not panic", name)
				}
			}()
			New(time.Now(), Options{}).Add(name, func() any { return nil })
		})
	}
}

type statusValue string

func (s statusValue) Status() string { return string(s) }

// A degraded section makes the report degraded and names it; the others
// keep it ok.
func TestDegradedSections(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sections map[string]any
		status   string
		degraded []string
	}{
		{"all ok", map[string]any{"storage": map[string]any{"status": "ok"}, "bus": 3}, "ok", nil},
		{"storage degraded", map[string]any{"storage": map[string]any{"status": "degraded", "reason": "disk full"}, "bus": 3}, "degraded", []string{"storage"}},
		{"by method, two sections", map[string]any{"a": statusValue("degraded"), "b": map[string]any{"status": "degraded"}, "c": statusValue("ok")}, "degraded", []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := New(time.Unix(0, 0), Options{Clock: clock.NewFake(time.Unix(1, 0))})
			for name, v := range tc.sections {
				h.Add(name, func() any { return v })
			}
			rep := h.Report()
			got, _ := rep["degraded"].([]string)
			if rep["status"] != tc.status || fmt.Sprint(got) != fmt.Sprint(tc.degraded) {
				t.Errorf("status %v, degraded %v; want %s %v", rep["status"], rep["degraded"], tc.status, tc.degraded)
			}
		})
	}
}
