// Package access guards the backend's HTTP surface: who may change state
// (bearer tokens), from which pages (Origin against the CORS list), through
// which names (Host, against DNS rebinding, when bound to loopback) and with
// what bodies (JSON or NDJSON, decompressed within a bound). It also answers
// CORS for the host origins the operator configured.
//
// Reads (GET, HEAD, OPTIONS) stay open, as the panel and Prometheus need;
// every other method under the API prefix is a change and is guarded, so a
// route added later is covered without naming it here. A change through
// the measuring proxy (routes.Proxy: a generation is a POST that takes the
// GPU) gets the Origin and body-type checks too, and no decompression (its
// body goes on as it came); every request through it, reads too, needs the
// proxy's own token when one is set (Options.ProxyToken).
package access

import (
	"bytes"
	"crypto/subtle"
	"strings"
	"sync/atomic"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/cors"
	"github.com/valyala/fasthttp"

	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/routes"
)

// DefaultMaxBody bounds a request body after decompression, as
// server.Options.BodyLimit bounds it on the wire.
const DefaultMaxBody = 32 << 20

// EventsPath is the one route the producer token opens, under the prefix.
const EventsPath = "/events"

// Options configure the guard.
type Options struct {
	// Token is required, as "Authorization: Bearer <token>", of every
	// change under the API. Empty requires none.
	Token string
	// ProducerToken is accepted for POST /events alone: an event source
	// holds it without being able to start or cancel GPU jobs. When it is
	// set and Token is not, it guards every change (it is then the only
	// token, and a bench route left open would defeat it).
	ProducerToken string
	// Origins are the host origins (from ParseOrigins) whose pages may call
	// the API: CORS answers them, and a change sent from any other page
	// (its Origin neither this server nor listed) is refused.
	Origins []string
	// Loopback says the server is bound to a loopback address: every
	// request must then name a loopback host, or the host of one of
	// Origins (a reverse proxy passing its public name on), so that a page
	// whose DNS name was rebound to 127.0.0.1 cannot reach it.
	Loopback bool
	// MaxBody bounds a body after Content-Encoding is undone;
	// DefaultMaxBody when 0.
	MaxBody int
	// MaxDecodes bounds how many bodies are inflated at once
	// (DefaultMaxDecodes when 0): each may take MaxBody and more.
	MaxDecodes int
	// ProxyToken, when set, is required as "Authorization: Bearer <token>"
	// of every request through the measuring proxy (routes.Proxy), reads
	// too: it stands in front of the engine's GPU as an API key does. The
	// header is removed once checked, so the upstream never sees it.
	ProxyToken string
}

// DefaultMaxDecodes is how many compressed bodies are inflated at once; a
// request past them is answered 503, to send again. A host's publisher
// sends one batch at a time.
const DefaultMaxDecodes = 4

// Guard is the access feature: mount it before every other feature.
type Guard struct {
	opts    Options
	anyOrig bool
	hosts   map[string]bool // the Origins' host[:port], allowed as Host

	cors     fiber.Handler
	refusals refusals
	decoding chan struct{} // a token per body being inflated
}

// New returns the guard opts describe.
func New(opts Options) *Guard {
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.MaxDecodes <= 0 {
		opts.MaxDecodes = DefaultMaxDecodes
	}
	if opts.Token == "" {
		opts.Token, opts.ProducerToken = opts.ProducerToken, ""
	}
	g := &Guard{opts: opts, hosts: map[string]bool{}, decoding: make(chan struct{}, opts.MaxDecodes)}
	for _, o := range opts.Origins {
		g.anyOrig = g.anyOrig || o == "*"
		if _, host, ok := strings.Cut(o, "://"); ok {
			g.hosts[host] = true
		}
	}
	if len(opts.Origins) > 0 {
		allow := strings.Join(opts.Origins, ",")
		if g.anyOrig {
			allow = "*" // it covers the others, and Fiber's CORS panics on "*" among them
		}
		g.cors = cors.New(cors.Config{
			AllowOrigins: allow,
			AllowMethods: "GET,HEAD,POST,DELETE,OPTIONS",
			AllowHeaders: "Accept,Authorization,Content-Type,Last-Event-ID",
			MaxAge:       600,
		})
	}
	return g
}

// Protected reports whether changes need a token.
func (g *Guard) Protected() bool { return g.opts.Token != "" }

// ProxyProtected reports whether the proxy needs a token.
func (g *Guard) ProxyProtected() bool { return g.opts.ProxyToken != "" }

// AnyOrigin reports whether --cors-origins lets every page in ("*"):
// without a token, any page the user opens may then change state.
func (g *Guard) AnyOrigin() bool { return g.anyOrig }

// Mount registers, ahead of every route: the Host check (all routes), CORS
// for the configured origins, then the checks on changes under the API.
func (g *Guard) Mount(root *fiber.App, _ fiber.Router) {
	root.Use(g.checkHost)
	if g.cors != nil {
		root.Use(g.cors)
	}
	root.Use(g.checkChange)
}

func (g *Guard) checkHost(c *fiber.Ctx) error {
	if host := string(c.Request().Header.Host()); g.opts.Loopback && !IsLoopbackHost(host) && !g.hosts[strings.ToLower(host)] {
		return fiber.NewError(fiber.StatusForbidden, "this server answers only to a loopback host name (127.0.0.1, localhost or [::1]) or a --cors-origins host")
	}
	return c.Next()
}

// change says where a request that may change state goes: under the API,
// through the proxy, or neither (a read, or another route). Routes match
// case-insensitively, so the prefixes do too.
func change(c *fiber.Ctx) (api, proxied bool) {
	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
		return false, false
	}
	return under(c.Path(), server.APIPrefix), under(c.Path(), routes.Proxy)
}

// under reports whether path is prefix or below it; routes match
// case-insensitively, so this does too.
func under(path, prefix string) bool {
	p := strings.ToLower(path)
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

func (g *Guard) checkChange(c *fiber.Ctx) error {
	if g.opts.ProxyToken != "" && c.Method() != fiber.MethodOptions && under(c.Path(), routes.Proxy) {
		if !g.admitsProxy(c.Get(fiber.HeaderAuthorization)) {
			c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="mlx-metrics proxy"`)
			return fiber.NewError(fiber.StatusUnauthorized, "missing or wrong bearer token: the proxy at /v1 takes Authorization: Bearer <token> (the backend's --proxy-token, else its --token)")
		}
		c.Request().Header.Del(fiber.HeaderAuthorization) // the proxy's, not the upstream's
	}
	api, proxied := change(c)
	if !api && !proxied {
		return c.Next()
	}
	if o := c.Get(fiber.HeaderOrigin); o != "" && !g.originAllowed(c, o) {
		return fiber.NewError(fiber.StatusForbidden, "changes are refused from pages of other origins: add the page's origin to --cors-origins")
	}
	if proxied {
		if err := checkContentType(c); err != nil {
			return err
		}
		return c.Next()
	}
	if !g.authorized(c) {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="mlx-metrics"`)
		return fiber.NewError(fiber.StatusUnauthorized, "missing or wrong bearer token: send Authorization: Bearer <token> (the backend's --token)")
	}
	if err := checkContentType(c); err != nil {
		return err
	}
	if err := g.decodeBody(c); err != nil {
		return err
	}
	return c.Next()
}

// originAllowed: the server's own origin (the Origin's host is the Host
// the request was sent to) or a configured one.
func (g *Guard) originAllowed(c *fiber.Ctx, origin string) bool {
	o := strings.ToLower(strings.TrimRight(origin, "/"))
	if _, host, ok := strings.Cut(o, "://"); ok && host == strings.ToLower(string(c.Request().Header.Host())) {
		return true
	}
	if g.anyOrig {
		return true
	}
	for _, allowed := range g.opts.Origins {
		if o == allowed {
			return true
		}
	}
	return false
}

func (g *Guard) authorized(c *fiber.Ctx) bool {
	return g.admits(c.Method(), c.Path(), c.Get(fiber.HeaderAuthorization))
}

// admits reports whether a change of method to path carrying the
// Authorization header authorization has a token that lets it through.
func (g *Guard) admits(method, path, authorization string) bool {
	if g.opts.Token == "" {
		return true
	}
	got, ok := bearer(authorization)
	if !ok {
		return false
	}
	if equal(got, g.opts.Token) {
		return true
	}
	return g.opts.ProducerToken != "" && method == fiber.MethodPost &&
		strings.EqualFold(strings.TrimRight(path, "/"), server.APIPrefix+EventsPath) &&
		equal(got, g.opts.ProducerToken)
}

// admitsProxy reports whether the Authorization header authorization
// opens the proxy.
func (g *Guard) admitsProxy(authorization string) bool {
	if g.opts.ProxyToken == "" {
		return true
	}
	got, ok := bearer(authorization)
	return ok && equal(got, g.opts.ProxyToken)
}

// AdmitsBody reports whether a request may send a large body, from its
// header alone (server.BodyGate): not a change to the API, nor a request
// through the proxy, without the token it needs, which would be refused
// once its body was read.
func (g *Guard) AdmitsBody(h *fasthttp.RequestHeader, path string) bool {
	if under(path, routes.Proxy) {
		return g.admitsProxy(string(h.Peek(fiber.HeaderAuthorization)))
	}
	if !under(path, server.APIPrefix) {
		return true // the route decides
	}
	return g.admits(string(h.Method()), path, string(h.Peek(fiber.HeaderAuthorization)))
}

// bearer is the credentials of an "Authorization: Bearer <token>" header;
// the scheme is case-insensitive (RFC 9110 11.1).
func bearer(header string) (string, bool) {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	cred = strings.TrimSpace(cred)
	return cred, cred != ""
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// refusals counts refused requests by kind, for /healthz.
type refusals struct {
	unauthorized, forbidden, tooLarge, unsupported, emptyBody, timeout, methodNotAllowed atomic.Int64
}

// Stats is the /healthz section of refusals: every request the server
// refused before it reached a handler's logic, by kind.
type Stats struct {
	Unauthorized     int64 `json:"unauthorized"`     // 401: no or wrong token
	Forbidden        int64 `json:"forbidden"`        // 403: foreign Origin, or a non-loopback Host
	TooLarge         int64 `json:"tooLarge"`         // 413: over the body limit, on the wire or decoded
	Unsupported      int64 `json:"unsupported"`      // 415: not JSON/NDJSON, or an unknown Content-Encoding
	EmptyBody        int64 `json:"emptyBody"`        // 400 to a POST with no body, or only blanks
	Timeout          int64 `json:"timeout"`          // 408: the request was not sent within the read timeout
	MethodNotAllowed int64 `json:"methodNotAllowed"` // 405
}

// Refused notes a refusal; it is the server's OnError hook, so it sees
// the refusals made before any route ran (413 on the wire, 408) as well as
// the guard's and the handlers' own, returned or written with server.Error.
func (g *Guard) Refused(c *fiber.Ctx, status int) {
	r := &g.refusals
	switch status {
	case fiber.StatusUnauthorized:
		r.unauthorized.Add(1)
	case fiber.StatusForbidden:
		r.forbidden.Add(1)
	case fiber.StatusRequestEntityTooLarge:
		r.tooLarge.Add(1)
	case fiber.StatusUnsupportedMediaType:
		r.unsupported.Add(1)
	case fiber.StatusRequestTimeout:
		r.timeout.Add(1)
	case fiber.StatusMethodNotAllowed:
		r.methodNotAllowed.Add(1)
	case fiber.StatusBadRequest:
		// A body still a stream was refused before it was read: reading it
		// here would take it whole, unbounded.
		if c.Method() == fiber.MethodPost && !c.Request().IsBodyStream() && len(bytes.TrimSpace(c.Request().Body())) == 0 {
			r.emptyBody.Add(1)
		}
	}
}

// Stats returns the counts so far.
func (g *Guard) Stats() Stats {
	r := &g.refusals
	return Stats{
		Unauthorized:     r.unauthorized.Load(),
		Forbidden:        r.forbidden.Load(),
		TooLarge:         r.tooLarge.Load(),
		Unsupported:      r.unsupported.Load(),
		EmptyBody:        r.emptyBody.Load(),
		Timeout:          r.timeout.Load(),
		MethodNotAllowed: r.methodNotAllowed.Load(),
	}
}
