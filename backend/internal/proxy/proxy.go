// Package proxy fronts an OpenAI-compatible server (--proxy-to URL) and
// measures each generation request from outside, for engines that publish
// no mlx events of their own.
//
// Requests under /v1/ go to the upstream unchanged, but for their dot
// segments, which are resolved (a path that leaves /v1 is refused with
// 400), and answers come back unchanged: status, headers, body, and event
// streams event by event as the upstream writes them. Completions and chat
// completions are measured on the way through (time to first token, total
// time, token counts from the answer's usage, decode rate) and published as
// request.finished events.
package proxy

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/mlx-bun/mlx-metrics/backend/internal/printable"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// measuredPaths are the generation endpoints measured on POST.
var measuredPaths = map[string]bool{
	"/v1/chat/completions": true,
	"/v1/completions":      true,
}

// hopByHop are connection-level headers a proxy must not forward (RFC 9110
// section 7.6.1).
var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Proxy-Connection": true, "Te": true,
	"Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
}

// Proxy forwards /v1/* to one upstream.
type Proxy struct {
	base    string // scheme://host[/prefix], without /v1
	client  *http.Client
	publish func(events.Event)
	clock   clock.Clock
	seq     atomic.Uint64
	// ctx parents every upstream request, so that its end (the server
	// shutting down) stops streams that would otherwise hold the shutdown
	// open until the upstream finished generating.
	ctx context.Context

	idle, stall   time.Duration
	upstreamToken string
}

// Options configure a Proxy. The zero value is the defaults.
type Options struct {
	// Clock times the requests it measures (clock.Real{} when nil).
	Clock clock.Clock
	// BaseContext parents every upstream request: when it ends, every
	// request in flight is cancelled, its client's answer ends there, and
	// it counts as cancelled (context.Background() when nil: never).
	BaseContext context.Context
	// HeadTimeout bounds the wait for an answer's head (504 past it);
	// DefaultHeadTimeout when 0.
	HeadTimeout time.Duration
	// IdleTimeout bounds each wait for the next bytes of an answer's body;
	// past it the upstream request is cancelled and the client's answer
	// ends there. DefaultIdleTimeout when 0.
	IdleTimeout time.Duration
	// StallTimeout bounds how long a client may leave the bytes handed to
	// it unread (its connection's buffers full); past it the upstream
	// request is cancelled, as when the client leaves. DefaultStallTimeout
	// when 0.
	StallTimeout time.Duration
	// UpstreamToken, when set, is sent to the upstream as "Authorization:
	// Bearer <token>" (the client's own Authorization is the proxy's,
	// checked and removed by the access guard when a token guards /v1).
	UpstreamToken string
}

// New returns a proxy to upstream, the server's root or its /v1 root
// (http://127.0.0.1:8000 and http://127.0.0.1:8000/v1 are the same).
func New(upstream string, publish func(events.Event), opts Options) (*Proxy, error) {
	if err := CheckUpstream(upstream); err != nil {
		return nil, fmt.Errorf("proxy upstream %w", err)
	}
	u, _ := url.Parse(upstream)
	path := strings.TrimSuffix(strings.TrimSuffix(u.EscapedPath(), "/"), "/v1")
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.BaseContext == nil {
		opts.BaseContext = context.Background()
	}
	opts.HeadTimeout = cmp.Or(opts.HeadTimeout, DefaultHeadTimeout)
	opts.IdleTimeout = cmp.Or(opts.IdleTimeout, DefaultIdleTimeout)
	opts.StallTimeout = cmp.Or(opts.StallTimeout, DefaultStallTimeout)
	return &Proxy{
		base: u.Scheme + "://" + u.Host + path,
		client: &http.Client{
			Transport: &http.Transport{
				Proxy:       http.ProxyFromEnvironment,
				DialContext: (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
				// Bodies pass through as the upstream encoded them.
				DisableCompression:  true,
				MaxIdleConns:        512,
				MaxIdleConnsPerHost: 512,
				IdleConnTimeout:     90 * time.Second,
				// A non-streamed completion's head comes when it is done.
				ResponseHeaderTimeout: opts.HeadTimeout,
			},
			// Redirects are the client's to follow.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		publish:       publish,
		clock:         opts.Clock,
		ctx:           opts.BaseContext,
		idle:          opts.IdleTimeout,
		stall:         opts.StallTimeout,
		upstreamToken: opts.UpstreamToken,
	}, nil
}

// CheckUpstream says why New would refuse upstream, or nil: it must be an
// http(s) URL with a host and without a query or fragment.
func CheckUpstream(upstream string) error {
	u, err := url.Parse(upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q: want an http(s) URL", upstream)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q: want no query or fragment", upstream)
	}
	return nil
}

// Upstream is the URL requests go to, without /v1.
func (p *Proxy) Upstream() string { return p.base }

// Handle relays a request to /v1/* (any method) to the upstream.
func (p *Proxy) Handle(c *fiber.Ctx) error {
	start := p.clock.Now()
	uri := c.Request().URI()
	path, decoded, err := cleanPath(string(uri.PathOriginal()))
	if err != nil {
		return server.Error(c, fiber.StatusBadRequest, err.Error())
	}
	target := p.base + path
	if q := uri.QueryString(); len(q) > 0 {
		target += "?" + string(q)
	}
	// The body is the request's own buffer (the server's readBody reads
	// it into one fasthttp never reuses), so the upstream request may
	// outlive the handler. It is taken as it came: c.Body() would decode
	// a Content-Encoding the upstream is told it still has.
	body := c.Request().Body()
	var m *meter
	if c.Method() == fiber.MethodPost && measuredPaths[decoded] {
		m = newMeter(start, body)
	}

	ctx, cancelCause := context.WithCancelCause(p.ctx)
	cancel := func() { cancelCause(nil) }
	req, err := upstreamRequest(ctx, c, target, body, m != nil, p.upstreamToken)
	if err != nil {
		cancel()
		return server.Error(c, fiber.StatusBadRequest, "the request cannot be forwarded: "+unquoted(err))
	}
	watch := watchLeave(p.clock, c.Context().Conn(), cancel)
	resp, err := p.client.Do(req)
	left := watch.end()
	if err != nil {
		cancel()
		// Cancelled for the client leaving, or serve stopping.
		p.finish(m, outcome{end: p.clock.Now(), cancelled: left || p.ctx.Err() != nil})
		if left {
			// Nothing is sent, as nginx sends nothing (its 499): a client
			// that only half-closed must not read an answer as a success.
			c.Context().HijackSetNoResponse(true)
			c.Context().Hijack(func(net.Conn) {}) // the server closes the connection
			return nil
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return server.Error(c, fiber.StatusGatewayTimeout, fmt.Sprintf("upstream %s: no answer within %v (--proxy-head-timeout)", p.base, p.client.Transport.(*http.Transport).ResponseHeaderTimeout))
		}
		return server.Error(c, fiber.StatusBadGateway, "upstream "+p.base+": "+unquoted(err))
	}
	// The answer's body is read within the idle timeout, and handed to a
	// client that must take it within the stall timeout.
	resp.Body = &upstreamReader{body: resp.Body, clock: p.clock, idle: p.idle, stall: p.stall,
		cancel: cancelCause, conn: c.Context().Conn()}

	copyResponseHeaders(&c.Response().Header, resp.Header)
	c.Status(resp.StatusCode)

	// An answer of known length is sent with its length, any other
	// chunked. Each is relayed as it arrives, never held whole: an
	// unmeasured one copied by fasthttp, a measured one through the relay
	// (an event stream event by event), which gives the meter a bounded
	// copy.
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	sse := mediaType == "text/event-stream"
	length := -1
	if !sse && resp.ContentLength >= 0 {
		length = int(resp.ContentLength)
	}
	if m == nil && length >= 0 {
		c.Context().SetBodyStream(upstreamBody{resp.Body.(*upstreamReader), cancel}, length)
		return nil
	}
	if m != nil {
		m.sse = sse
	}
	c.Context().SetBodyStream(&relay{p: p, ctx: ctx, cancel: cancel, body: resp.Body,
		status: resp.StatusCode, m: m, sse: sse, empty: resp.ContentLength == 0}, length)
	return nil
}

// maxEcho bounds what an error message quotes of an error.
const maxEcho = 200

// unquoted is err's text without the URL a *url.Error quotes (the client's
// path and query are not the server's to echo back), cut to maxEcho bytes:
// net/http quotes a malformed upstream header line whole.
func unquoted(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	if len(msg) > maxEcho {
		return printable.Cut(msg, maxEcho) + "…"
	}
	return msg
}

// upstreamBody is an answer fasthttp copies to the client; fasthttp closes
// it once the response is written (or the client is gone), which ends the
// upstream request.
type upstreamBody struct {
	*upstreamReader
	cancel func()
}

func (b upstreamBody) Close() error {
	err := b.upstreamReader.Close()
	b.cancel()
	return err
}

func (p *Proxy) finish(m *meter, o outcome) {
	if m == nil {
		return
	}
	p.publish(m.event(o, fmt.Sprintf("proxy-%d", p.seq.Add(1))))
}

// connectionTokens are the header names a Connection header lists.
func connectionTokens(v string) map[string]bool {
	if v == "" {
		return nil
	}
	out := map[string]bool{}
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out[http.CanonicalHeaderKey(f)] = true
		}
	}
	return out
}

// upstreamRequest is the client's request addressed to target, with its
// headers less the hop-by-hop ones, and the upstream's token when there is
// one (token). A measured request drops
// Accept-Encoding so that the answer arrives readable: identity is always
// acceptable.
func upstreamRequest(ctx context.Context, c *fiber.Ctx, target string, body []byte, measured bool, token string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, c.Method(), target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	connection := connectionTokens(string(c.Request().Header.Peek("Connection")))
	c.Request().Header.VisitAll(func(k, v []byte) {
		key := http.CanonicalHeaderKey(string(k))
		if hopByHop[key] || connection[key] || key == "Host" || key == "Content-Length" ||
			(measured && key == "Accept-Encoding") {
			return
		}
		req.Header.Add(key, string(v))
	})
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if prior := req.Header.Get("X-Forwarded-For"); prior != "" {
		req.Header.Set("X-Forwarded-For", prior+", "+c.IP())
	} else {
		req.Header.Set("X-Forwarded-For", c.IP())
	}
	return req, nil
}

// copyResponseHeaders sets the upstream's headers on the client's answer,
// less the hop-by-hop ones and the length, which the server sets itself.
func copyResponseHeaders(res *fasthttp.ResponseHeader, h http.Header) {
	res.SetNoDefaultContentType(true)
	connection := connectionTokens(h.Get("Connection"))
	for k, vs := range h {
		if hopByHop[k] || connection[k] || k == "Content-Length" {
			continue
		}
		for _, v := range vs {
			res.Add(k, v)
		}
	}
}
