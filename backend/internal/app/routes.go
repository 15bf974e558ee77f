package app

import (
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

// Handlers are what the route table's handlers belong to, each set by the
// part that has it (Part.Handlers); one left nil serves none of its rows.
type Handlers struct {
	Panel  *webui.UI
	Health *health.Health
	Live   *live.Live
	Events *ingest.HTTP
	Bench  *benchapi.API
	Prom   *prom.Exporter
	Fleet  *fleet.Feature
	Proxy  *proxy.Proxy // with --proxy-to
}

// Routes is the route table: every route serve answers, in the order a
// request meets them (it reaches the first that matches, and a handler may
// pass it on to the next). A row says its method (GET serves HEAD too),
// its path, its handler, the largest body it takes (SmallBody, 64 KiB,
// unless said), whether it streams (no write timeout: it bounds a slow
// reader itself) and which token opens it (none unless said). The server
// takes each request's body limit and write timeout from it, the access
// guard the token it asks for; README.md's table of routes is held to it
// (TestReadmeRoutes), and so is the module manifest's (TestManifestRoutes).
func Routes(h Handlers) []server.Route {
	const api = routes.Prefix
	get, post, del := fiber.MethodGet, fiber.MethodPost, fiber.MethodDelete
	var t []server.Route
	if u := h.Panel; u != nil {
		// The standalone page (at /metrics only for a browser: the
		// exposition's row below answers the rest), the element's loader
		// and the panel's frame.
		t = append(t, []server.Route{
			{Method: get, Path: "/", Handler: u.Page},
			{Method: get, Path: "/metrics", Handler: u.PageForBrowsers},
			{Method: get, Path: "/metrics/", Handler: u.MetricsSlash},
			{Method: get, Path: webui.LoaderPath, Handler: u.Loader},
			{Method: get, Path: routes.Panel, Handler: u.Frame},
			{Method: get, Path: routes.Panel + "/*", Handler: u.Frame},
		}...)
	}
	if hz := h.Health; hz != nil {
		t = append(t, []server.Route{
			{Method: get, Path: "/healthz", Handler: hz.Handle},
			{Method: get, Path: api + "/healthz", Handler: hz.Handle},
		}...)
	}
	if l := h.Live; l != nil {
		t = append(t, []server.Route{
			{Method: get, Path: api + "/snapshot", Handler: l.HandleSnapshot},
			{Method: get, Path: routes.Stream, Handler: l.HandleStream, Streams: true},
		}...)
	}
	if e := h.Events; e != nil {
		t = append(t, server.Route{Method: post, Path: routes.Events, Handler: e.Handle, Body: server.LargeBody, Token: server.EventsToken})
	}
	if h.Bench != nil {
		// /bench/profiles before /bench/:id.
		b := h.Bench.Handlers()
		t = append(t, []server.Route{
			{Method: get, Path: api + "/bench/profiles", Handler: b.Profiles},
			{Method: post, Path: api + "/bench", Handler: b.Start, Token: server.APIToken},
			{Method: get, Path: api + "/bench", Handler: b.Jobs, Streams: true},
			{Method: get, Path: api + "/bench/:id", Handler: b.Job},
			{Method: del, Path: api + "/bench/:id", Handler: b.Cancel, Token: server.APIToken},
			{Method: get, Path: api + "/bench/:id/events", Handler: b.JobEvents, Streams: true},
			{Method: get, Path: api + "/bench/:id/report", Handler: b.JobReport},
			{Method: get, Path: api + "/bench/:id/requests/:file", Handler: b.JobRequests},
			{Method: get, Path: api + "/history", Handler: b.History},
			{Method: post, Path: api + "/history", Handler: b.Import, Body: server.LargeBody, Token: server.APIToken},
			{Method: get, Path: api + "/history/:id", Handler: b.Run},
			{Method: del, Path: api + "/history/:id", Handler: b.Forget, Token: server.APIToken},
		}...)
	}
	if e := h.Prom; e != nil {
		t = append(t, []server.Route{
			{Method: get, Path: api + "/prometheus", Handler: e.Handle},
			{Method: get, Path: "/metrics", Handler: e.Handle},
		}...)
	}
	if f := h.Fleet; f != nil {
		t = append(t, server.Route{Method: get, Path: api + "/fleet", Handler: f.Handle})
	}
	if p := h.Proxy; p != nil {
		t = append(t, server.Route{Method: server.AnyMethod, Path: routes.Proxy + "/*", Handler: p.Handle,
			Body: server.LargeBody, Streams: true, Token: server.ProxyToken})
	}
	return t
}
