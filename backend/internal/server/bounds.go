package server

import (
	"fmt"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// SmallBodyLimit bounds the body of a request to a route that takes no
// large body (every route but a BodyTaker's): a bench start, a DELETE, a
// GET with a body, a path that routes nowhere.
const SmallBodyLimit = 64 << 10

// DefaultWriteTimeout bounds writing one answer of a route that is not a
// Streamer's: a client that stops reading a large buffered answer (a
// Prometheus exposition of a thousand models, a history CSV) lets it go
// after this. 60 s sends the panel's WebAssembly at 40 KB/s.
const DefaultWriteTimeout = 60 * time.Second

// A BodyTaker has routes that take bodies up to Options.BodyLimit: a
// POST, PUT or PATCH at BodyPaths (a path, or a prefix ending in "/*").
// fasthttp allocates a body's declared length before it reads a byte of
// it, so every other request's bound is SmallBodyLimit, decided from its
// header: a 100-byte request declaring 32 MiB to a path that takes no
// body costs nothing.
type BodyTaker interface {
	BodyPaths() []string
}

// A BodyGate refuses, from a request's header, a large body to a request
// it will refuse once the body is read (one without the token it needs):
// such a request is bounded by SmallBodyLimit. path is the request's,
// decoded.
type BodyGate interface {
	AdmitsBody(h *fasthttp.RequestHeader, path string) bool
}

// A Streamer has routes, at StreamPaths, that write for as long as their
// client reads and bound a slow client themselves (they take the
// connection over); every other answer must be written within
// DefaultWriteTimeout.
type Streamer interface {
	StreamPaths() []string
}

// bounds decides, from a request's header, the body limit and the write
// timeout of the request.
type bounds struct {
	bodies, streams []string
	gates           []BodyGate
	small           int // SmallBodyLimit, or the server's limit when lower
	large           int // the server's limit (Options.BodyLimit)
	writeTimeout    time.Duration
}

func boundsOf(features []Feature, bodyLimit int, writeTimeout time.Duration) *bounds {
	b := &bounds{small: min(SmallBodyLimit, bodyLimit), large: bodyLimit, writeTimeout: writeTimeout}
	for _, f := range features {
		if t, ok := f.(BodyTaker); ok {
			b.bodies = append(b.bodies, t.BodyPaths()...)
		}
		if g, ok := f.(BodyGate); ok {
			b.gates = append(b.gates, g)
		}
		if s, ok := f.(Streamer); ok {
			b.streams = append(b.streams, s.StreamPaths()...)
		}
	}
	return b
}

// config is fasthttp's Server.HeaderReceived, which runs before fasthttp
// reads any of the body: a request refused from its header (its framing,
// or a declared length over its limit) is told it has no body, so that
// none is read or waited for; readBody answers it. The write timeout is
// every route's but a Streamer's.
func (b *bounds) config(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	path := routedPath(h)
	if refuseBody(h) || declared(h) > int64(b.limitAt(h, path)) {
		h.SetContentLength(0) // also drops Transfer-Encoding
	}
	var rc fasthttp.RequestConfig
	if !matches(b.streams, path) {
		rc.WriteTimeout = b.writeTimeout
	}
	return rc
}

// limit is the most a request's body may hold, from its header.
func (b *bounds) limit(h *fasthttp.RequestHeader) int { return b.limitAt(h, routedPath(h)) }

func (b *bounds) limitAt(h *fasthttp.RequestHeader, path string) int {
	if !takesBody(h.Method()) || !matches(b.bodies, path) || !b.admitted(h, path) {
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
	return fmt.Sprintf("the body is over this request's limit: %s, or %s for a POST, PUT or PATCH to %s (with the token, when one is set)",
		Size(b.small), Size(b.large), strings.Join(b.bodies, ", "))
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

func (b *bounds) admitted(h *fasthttp.RequestHeader, path string) bool {
	for _, g := range b.gates {
		if !g.AdmitsBody(h, path) {
			return false
		}
	}
	return true
}

// takesBody reports whether a request of method may carry a large body.
func takesBody(method []byte) bool {
	switch string(method) {
	case fasthttp.MethodPost, fasthttp.MethodPut, fasthttp.MethodPatch:
		return true
	}
	return false
}

// matches reports whether path is one of patterns, or under one ending in
// "/*". Routing ignores case, and so does this.
func matches(patterns []string, path string) bool {
	for _, p := range patterns {
		if prefix, ok := strings.CutSuffix(p, "/*"); ok {
			if len(path) > len(prefix) && strings.EqualFold(path[:len(prefix)], prefix) && path[len(prefix)] == '/' {
				return true
			}
			continue
		}
		if strings.EqualFold(strings.TrimSuffix(path, "/"), p) {
			return true
		}
	}
	return false
}
