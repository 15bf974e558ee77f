// Package access guards the backend's HTTP surface: who may use a route
// (bearer tokens), change state from which pages (Origin against the CORS
// list), through which names (Host, against DNS rebinding, when bound to
// loopback) and with what bodies (JSON or NDJSON, decompressed within a
// bound). It also answers CORS for the host origins the operator
// configured.
//
// Which token opens a route is its row's in the route table
// (server.Route.Token, app.Routes): none for the reads, the API's token
// for its changes, the producer's too for POST /events, and the proxy's
// for every request through the measuring proxy (/v1), reads too. Every
// change (any method but GET, HEAD and OPTIONS) also gets the Origin and
// body-type checks, and has its body decompressed, but through the proxy
// (its body goes on as it came).
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
)

// DefaultMaxBody bounds a request body after decompression, as
// server.Options.BodyLimit bounds it on the wire.
const DefaultMaxBody = 32 << 20

// Options configure the guard.
type Options struct {
	// Token is required, as "Authorization: Bearer <token>", of every
	// change under the API. Empty requires none.
	Token string
	// ProducerToken is accepted for the routes of server.EventsToken alone
	// (POST /events): an event source holds it without being able to
	// start or cancel GPU jobs. When it is
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
	// of every request to a route of server.ProxyToken (the measuring
	// proxy's), reads too: it stands in front of the engine's GPU as an
	// API key does. The header is removed once checked, so the upstream
	// never sees it.
	ProxyToken string
}

// DefaultMaxDecodes is how many compressed bodies are inflated at once; a
// request past them is answered 503, to send again. A host's publisher
// sends one batch at a time.
const DefaultMaxDecodes = 4

// Guard is the server's guard (server.Options.Guard).
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

// Use is what every request passes before it is routed: the Host check,
// then CORS for the configured origins (a preflight is answered there).
func (g *Guard) Use() []fiber.Handler {
	use := []fiber.Handler{g.checkHost}
	if g.cors != nil {
		use = append(use, g.cors)
	}
	return use
}

func (g *Guard) checkHost(c *fiber.Ctx) error {
	if host := string(c.Request().Header.Host()); g.opts.Loopback && !IsLoopbackHost(host) && !g.hosts[strings.ToLower(host)] {
		return fiber.NewError(fiber.StatusForbidden, "this server answers only to a loopback host name (127.0.0.1, localhost or [::1]) or a --cors-origins host")
	}
	return c.Next()
}

// Check is the check ahead of r's handler: the token its row names, and,
// for a change, the Origin and the body; none for a read that needs no
// token.
func (g *Guard) Check(r server.Route) fiber.Handler {
	if r.Token == server.NoToken && (r.Method == fiber.MethodGet || r.Method == fiber.MethodHead) {
		return nil
	}
	return func(c *fiber.Ctx) error { return g.check(c, r.Token) }
}

// check passes a request to a route that token opens, or answers why not:
// 401 without the token (the proxy's asked first, and removed so that the
// upstream never sees it), 403 for a change from a foreign page, 415 for
// a body of another type. A CORS preflight carries no token.
func (g *Guard) check(c *fiber.Ctx, token server.Token) error {
	method := c.Method()
	if method == fiber.MethodOptions {
		return c.Next()
	}
	change := method != fiber.MethodGet && method != fiber.MethodHead
	proxied := token == server.ProxyToken
	if proxied {
		if !g.admits(token, c.Get(fiber.HeaderAuthorization)) {
			c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="mlx-metrics proxy"`)
			return fiber.NewError(fiber.StatusUnauthorized, "missing or wrong bearer token: the proxy at /v1 takes Authorization: Bearer <token> (the backend's --proxy-token, else its --token)")
		}
		c.Request().Header.Del(fiber.HeaderAuthorization) // the proxy's, not the upstream's
	}
	if o := c.Get(fiber.HeaderOrigin); change && o != "" && !g.originAllowed(c, o) {
		return fiber.NewError(fiber.StatusForbidden, "changes are refused from pages of other origins: add the page's origin to --cors-origins")
	}
	if !proxied && !g.admits(token, c.Get(fiber.HeaderAuthorization)) {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="mlx-metrics"`)
		return fiber.NewError(fiber.StatusUnauthorized, "missing or wrong bearer token: send Authorization: Bearer <token> (the backend's --token)")
	}
	if !change {
		return c.Next()
	}
	if err := checkContentType(c); err != nil {
		return err
	}
	if !proxied { // the proxy's body goes on as it came
		if err := g.decodeBody(c); err != nil {
			return err
		}
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

// admits reports whether the Authorization header authorization has a
// token that opens a route of token.
func (g *Guard) admits(token server.Token, authorization string) bool {
	want := g.opts.Token
	switch token {
	case server.NoToken:
		return true
	case server.ProxyToken:
		want = g.opts.ProxyToken
	}
	if want == "" {
		return true
	}
	got, ok := bearer(authorization)
	if !ok {
		return false
	}
	return equal(got, want) ||
		token == server.EventsToken && g.opts.ProducerToken != "" && equal(got, g.opts.ProducerToken)
}

// Admits reports, from a request's header alone, whether it has the token
// of a route of token (server.Guard): a large body without it is refused
// before it is read, as the request would be once it was.
func (g *Guard) Admits(h *fasthttp.RequestHeader, token server.Token) bool {
	return g.admits(token, string(h.Peek(fiber.HeaderAuthorization)))
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
