package server

import (
	"fmt"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// SmallBodyLimit bounds the body of a request to a route that takes no
// large body (every route's but a LargeBody one's): a bench start, a
// DELETE, a GET with a body, a path that routes nowhere.
const SmallBodyLimit = 64 << 10

// DefaultWriteTimeout bounds writing one answer of a route that does not
// stream: a client that stops reading a large buffered answer (a
// Prometheus exposition of a thousand models, a history CSV) lets it go
// after this. 60 s sends the panel's WebAssembly at 40 KB/s.
const DefaultWriteTimeout = 60 * time.Second

// bounds decides, from a request's header, the body limit and the write
// timeout of the request, from the route it reaches (Find). fasthttp
// allocates a body's declared length before it reads a byte of it, so a
// request's bound is decided before its body is read: a 100-byte request
// declaring 32 MiB to a route that takes no large body costs nothing.
type bounds struct {
	routes       []Route
	guard        Guard // nil: every request has every token
	small        int   // SmallBodyLimit, or the server's limit when lower
	large        int   // the server's limit (Options.BodyLimit)
	writeTimeout time.Duration
}

func boundsOf(routes []Route, guard Guard, bodyLimit int, writeTimeout time.Duration) *bounds {
	return &bounds{routes: routes, guard: guard, small: min(SmallBodyLimit, bodyLimit), large: bodyLimit, writeTimeout: writeTimeout}
}

// config is fasthttp's Server.HeaderReceived, which runs before fasthttp
// reads any of the body: a request refused from its header (its framing,
// or a declared length over its limit) is told it has no body, so that
// none is read or waited for; readBody answers it. The write timeout is
// every route's but a streaming one's.
func (b *bounds) config(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	r, ok := b.route(h)
	if refuseBody(h) || declared(h) > int64(b.limitOf(h, r, ok)) {
		h.SetContentLength(0) // also drops Transfer-Encoding
	}
	var rc fasthttp.RequestConfig
	if !ok || !r.Streams {
		rc.WriteTimeout = b.writeTimeout
	}
	return rc
}

// route is the route a request reaches, from its header.
func (b *bounds) route(h *fasthttp.RequestHeader) (Route, bool) {
	return Find(b.routes, string(h.Method()), routedPath(h))
}

// limit is the most a request's body may hold, from its header.
func (b *bounds) limit(h *fasthttp.RequestHeader) int {
	r, ok := b.route(h)
	return b.limitOf(h, r, ok)
}

// limitOf is the limit of a request to r (found, when ok): large for a
// POST, PUT or PATCH to a LargeBody route with the token it needs.
func (b *bounds) limitOf(h *fasthttp.RequestHeader, r Route, ok bool) int {
	if !ok || r.Body != LargeBody || !takesBody(h.Method()) || b.guard != nil && !b.guard.Admits(h, r.Token) {
		return b.small
	}
	return b.large
}

// routedPath is a request's path as routing will see it: decoded, dot
// segments resolved.
func routedPath(h *fasthttp.RequestHeader) string {
	u := fasthttp.AcquireURI()
	defer fasthttp.ReleaseURI(u)
	_ = u.Parse(nil, h.RequestURI())
	return string(u.Path())
}

// tooLarge says why a body was refused.
func (b *bounds) tooLarge() string {
	var large []string
	for _, r := range b.routes {
		switch {
		case r.Body != LargeBody:
		case r.Method == AnyMethod:
			large = append(large, "a POST, PUT or PATCH to "+r.Path)
		default:
			large = append(large, r.Method+" "+r.Path)
		}
	}
	return fmt.Sprintf("the body is over this request's limit: %s, or %s for %s (with the token, when one is set)",
		Size(b.small), Size(b.large), strings.Join(large, ", "))
}

// Size says n bytes as KiB or MiB when it is whole ones.
func Size(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// takesBody reports whether a request of method may carry a large body.
func takesBody(method []byte) bool {
	switch string(method) {
	case fasthttp.MethodPost, fasthttp.MethodPut, fasthttp.MethodPatch:
		return true
	}
	return false
}
