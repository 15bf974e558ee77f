package app

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/benchapi"
	"github.com/mlx-bun/mlx-metrics/backend/internal/fleet"
	"github.com/mlx-bun/mlx-metrics/backend/internal/health"
	"github.com/mlx-bun/mlx-metrics/backend/internal/ingest"
	"github.com/mlx-bun/mlx-metrics/backend/internal/live"
	"github.com/mlx-bun/mlx-metrics/backend/internal/prom"
	"github.com/mlx-bun/mlx-metrics/backend/internal/proxy"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/backend/internal/webui"
	"github.com/mlx-bun/mlx-metrics/shared/routes"
)

// table is every row of the route table: Routes over every part, none of
// them started (no handler is called).
func table() []server.Route {
	return Routes(Handlers{Panel: new(webui.UI), Health: new(health.Health), Live: new(live.Live), Events: new(ingest.HTTP),
		Bench: new(benchapi.API), Prom: new(prom.Exporter), Fleet: new(fleet.Feature), Proxy: new(proxy.Proxy)})
}

// methodPath is a row as the README says it: "GET /api/metrics/snapshot",
// "any /v1/*".
func methodPath(r server.Route) string { return r.Method + " " + r.Path }

// The README's table of routes (the section "## Routes") is the route
// table: each of its rows names one method and the paths it serves, in
// backquotes, and every row of the table is there, nothing else.
func TestReadmeRoutes(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const heading = "## Routes"
	_, section, ok := strings.Cut(string(readme), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q section", heading)
	}
	if next := strings.Index(section, "\n## "); next >= 0 {
		section = section[:next]
	}
	path := regexp.MustCompile("`(/[^`]*)`")
	listed := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if !strings.HasPrefix(line, "|") || len(cells) < 3 {
			continue
		}
		method := strings.TrimSpace(cells[0])
		if method == "method" || strings.Trim(method, "-") == "" {
			continue // the header and the rule
		}
		paths := path.FindAllStringSubmatch(cells[1], -1)
		if len(paths) == 0 {
			t.Errorf("README.md: the row %q names no path", line)
		}
		for _, p := range paths {
			listed[method+" "+p[1]] = true
		}
	}
	if len(listed) == 0 {
		t.Fatalf("README.md's %q section has no routes", heading)
	}
	served := map[string]bool{}
	for _, r := range table() {
		served[methodPath(r)] = true
		if !listed[methodPath(r)] {
			t.Errorf("README.md's table of routes lacks %s", methodPath(r))
		}
	}
	for r := range listed {
		if !served[r] {
			t.Errorf("README.md lists %s, which is no route", r)
		}
	}
}

// The module manifest's routes (../shared/seed-manifest.txt beside the
// repository, written down here) are all served, under routes.Prefix, and
// the one it says answers server-sent events streams.
func TestManifestRoutes(t *testing.T) {
	manifest := []struct{ method, path, response string }{
		{"GET", "/snapshot", "json"},
		{"GET", "/stream", "sse"},
		{"GET", "/history", "json"},
		{"GET", "/history/:id", "json"},
		{"GET", "/bench/profiles", "json"},
		{"POST", "/bench", "json"},
		{"GET", "/bench", "json"},
		{"GET", "/bench/:id", "json"},
		{"DELETE", "/bench/:id", "json"},
	}
	rows := table()
	for _, m := range manifest {
		i := slices.IndexFunc(rows, func(r server.Route) bool { return r.Method == m.method && r.Path == routes.Prefix+m.path })
		switch {
		case i < 0:
			t.Errorf("the manifest's %s %s is no route", m.method, m.path)
		case m.response == "sse" && !rows[i].Streams:
			t.Errorf("the manifest's %s %s answers server-sent events, but its row does not stream", m.method, m.path)
		}
	}
}

// Every change (a method but GET) needs a token: a route added without one
// would be open to every client that reaches the server. Reads need none
// but through the proxy, which stands in front of the engine's GPU.
func TestChangesNeedAToken(t *testing.T) {
	for _, r := range table() {
		switch {
		case r.Method != fiber.MethodGet && r.Token == server.NoToken:
			t.Errorf("%s opens with no token", methodPath(r))
		case r.Method == fiber.MethodGet && r.Token != server.NoToken:
			t.Errorf("%s is a read that needs a token", methodPath(r))
		}
	}
}

// A route that Fiber's order would shadow is matched first: /bench/profiles
// before /bench/:id, and the page's /metrics (for a browser) before the
// exposition's.
func TestRouteOrder(t *testing.T) {
	rows := table()
	at := func(method, path string, from int) int {
		i := slices.IndexFunc(rows[from:], func(r server.Route) bool { return r.Method == method && r.Path == path })
		if i < 0 {
			t.Fatalf("no row %s %s after row %d", method, path, from)
		}
		return from + i
	}
	if at("GET", routes.Prefix+"/bench/profiles", 0) > at("GET", routes.Prefix+"/bench/:id", 0) {
		t.Error("/bench/:id comes before /bench/profiles, which it would take")
	}
	page := at("GET", "/metrics", 0)
	if r := rows[page]; !sameHandler(r.Handler, new(webui.UI).PageForBrowsers) {
		t.Error("the first GET /metrics is not the page's")
	}
	at("GET", "/metrics", page+1) // the exposition's, after it
}

// sameHandler reports whether a and b are the same method of their types.
func sameHandler(a, b fiber.Handler) bool {
	return a != nil && b != nil && funcName(a) == funcName(b)
}

func funcName(f fiber.Handler) string {
	return runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()
}
