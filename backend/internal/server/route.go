package server

import (
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// A Route is one row of the route table (backend/internal/app's Routes):
// every request policy of a route is said here, where it is registered,
// and the server and the guard take theirs from it.
type Route struct {
	// Method is the route's: GET also serves HEAD, AnyMethod every method.
	Method string
	// Path is as Fiber routes it: "/api/metrics/bench/:id", "/v1/*" (every
	// path below /v1/). Routing ignores case and a trailing slash.
	Path    string
	Handler fiber.Handler
	// Body is the largest body the route takes: SmallBody when zero.
	Body Body
	// Streams says the route writes for as long as its client reads, and
	// bounds a slow client itself: it has no write timeout.
	Streams bool
	// Token is which of the access guard's tokens opens the route.
	Token Token
}

// AnyMethod is the Method of a route that serves every method.
const AnyMethod = "any"

// Body is the largest body a route takes.
type Body int

const (
	// SmallBody is SmallBodyLimit (a bench start's profile name, a DELETE).
	SmallBody Body = iota
	// LargeBody is Options.BodyLimit, for a POST, PUT or PATCH with the
	// token the route needs: event batches, run imports, prompts.
	LargeBody
)

// Token is which token opens a route; the access guard says what each
// means (its Options) and checks it.
type Token int

const (
	// NoToken: open to every client (reads, the page, health).
	NoToken Token = iota
	// APIToken: --token, the token of every change to the API.
	APIToken
	// EventsToken: --token, or the producer-only --events-token.
	EventsToken
	// ProxyToken: --proxy-token (else --token), for every method but a
	// CORS preflight; the proxy's routes relay their bodies as they came.
	ProxyToken
)

// A Guard decides who may use a route, from the Token the table names for
// it (access.Guard is the one).
type Guard interface {
	// Use are the handlers every request passes before it is routed.
	Use() []fiber.Handler
	// Check is the handler ahead of r's own (nil for none).
	Check(r Route) fiber.Handler
	// Admits reports, from a request's header alone, whether it has the
	// token t: a large body is read only from a request that has (any
	// other would be refused once its body was read).
	Admits(h *fasthttp.RequestHeader, t Token) bool
}

// Find is the first of routes that a request of method to path (decoded,
// as routing sees it) reaches, as Fiber routes: case ignored, a trailing
// slash ignored, a :param one segment, GET serving HEAD too. "/prefix/*"
// is every path below "/prefix/", not "/prefix" itself (which Fiber routes
// to it too: a request there is bounded as one no route takes).
func Find(routes []Route, method, path string) (Route, bool) {
	for _, r := range routes {
		if methodMatches(r.Method, method) && pathMatches(r.Path, path) {
			return r, true
		}
	}
	return Route{}, false
}

func methodMatches(route, method string) bool {
	return route == AnyMethod || route == method || route == fiber.MethodGet && method == fiber.MethodHead
}

// pathMatches reports whether path is one that pattern routes.
func pathMatches(pattern, path string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "/*"); ok {
		return len(path) > len(prefix) && strings.EqualFold(path[:len(prefix)], prefix) && path[len(prefix)] == '/'
	}
	pattern, path = trimSlash(pattern), trimSlash(path)
	for pattern != "" {
		var want, got string
		want, pattern = segment(pattern)
		if path == "" {
			return false
		}
		got, path = segment(path)
		if strings.HasPrefix(want, ":") {
			if got == "" {
				return false
			}
			continue
		}
		if !strings.EqualFold(want, got) {
			return false
		}
	}
	return path == ""
}

// trimSlash is p without its trailing slashes, "/" kept.
func trimSlash(p string) string {
	if t := strings.TrimRight(p, "/"); t != "" {
		return t
	}
	return "/"
}

// segment splits "/a/b" into "a" and "/b".
func segment(p string) (string, string) {
	p = strings.TrimPrefix(p, "/")
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[:i], p[i:]
	}
	return p, ""
}
