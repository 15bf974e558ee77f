package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// The server reads request bodies itself (fasthttp's StreamRequestBody),
// not fasthttp: fasthttp would allocate a body's declared length before a
// byte of it arrived, so that 128 connections declaring 32 MiB held 4 GB.
// readBody reads each body as its bytes arrive, within the request's limit
// (bounds) and the server's Budget, before any feature's handler runs:
// every handler then finds Body() whole, in a buffer of the request's own
// that fasthttp never reuses.

// ErrOverLimit is ReadBody's answer for a body longer than its bound.
var ErrOverLimit = errors.New("over the limit")

// shareKey holds a request's share of the budget in its locals.
type shareKey struct{}

// share is what one request holds of the budget; it is given back when
// the request's handlers have returned.
type share struct {
	b *Budget
	n int64
}

func (s *share) take(n int64) error {
	if !s.b.take(n) {
		return fiber.NewError(fiber.StatusServiceUnavailable, fmt.Sprintf(
			"the server holds %s of request bodies already (its --body-memory): send it again in a second",
			Size(int(s.b.size))))
	}
	s.n += n
	return nil
}

func (s *share) give(n int64) {
	s.b.give(n)
	s.n -= n
}

// readBody is the middleware that reads a request's body before any
// feature sees it: refused from the header when it declares more than the
// request may send (the body is not read: fasthttp was told it had none,
// see bounds.config), else read whole. A body not read to its end closes
// the connection, since what follows on it is the rest of that body.
func (b *bounds) readBody(budget *Budget) fiber.Handler {
	return func(c *fiber.Ctx) error {
		sh := &share{b: budget}
		c.Locals(shareKey{}, sh)
		defer func() { sh.give(sh.n) }()
		req := c.Request()
		limit := b.limit(&req.Header)
		if declared(&req.Header) > int64(limit) {
			c.Response().SetConnectionClose()
			return fiber.NewError(fiber.StatusRequestEntityTooLarge, b.tooLarge())
		}
		if !req.IsBodyStream() {
			return c.Next()
		}
		body, err := ReadBody(c, req.BodyStream(), limit)
		if err != nil {
			c.Response().SetConnectionClose()
			return bodyError(err, b.tooLarge())
		}
		req.SetBodyRaw(body)
		return c.Next()
	}
}

// bodyError is the answer to a body that could not be read: 413 past the
// limit, 408 when its bytes did not come within the read timeout, 400
// when the connection or the chunked framing broke, and ReadBody's own
// answers (503 for want of budget) as they are.
func bodyError(err error, tooLarge string) error {
	var fe *fiber.Error
	var ne net.Error
	switch {
	case errors.As(err, &fe):
		return fe
	case errors.Is(err, ErrOverLimit):
		return fiber.NewError(fiber.StatusRequestEntityTooLarge, tooLarge)
	case errors.As(err, &ne) && ne.Timeout():
		return fiber.NewError(fiber.StatusRequestTimeout, "the body was not sent within the read timeout")
	}
	return fiber.NewError(fiber.StatusBadRequest, "the body broke off before its end, or its chunked framing is not valid")
}

// declared is the Content-Length the request was sent with, as it came
// (the header's own may have been set to 0 since, not to read the body),
// or -1 without one.
func declared(h *fasthttp.RequestHeader) int64 {
	v := headerValues(h.RawHeaders(), "content-length")
	if len(v) != 1 {
		return -1
	}
	n, err := strconv.ParseInt(string(v[0]), 10, 64)
	if err != nil || n < 0 {
		return -1 // fasthttp refused it before any handler
	}
	return n
}

// ReadBody reads r to its end if that is at most limit bytes, taking its
// buffer from the server's budget as it grows (the request gives it back
// when its handlers have returned); else it stops after limit+1 bytes with
// ErrOverLimit. Its buffer doubles as it fills but never past limit+1. When
// the budget cannot cover the next growth within its wait, the answer is
// a 503 with Retry-After (a *fiber.Error). A request that did not come
// through the server's middleware reads within limit alone.
func ReadBody(c *fiber.Ctx, r io.Reader, limit int) ([]byte, error) {
	sh, _ := c.Locals(shareKey{}).(*share)
	if sh == nil {
		sh = &share{b: unbounded}
		defer func() { sh.give(sh.n) }() // no request to give it back at its end
	}
	hint := limit + 1
	if n := c.Request().Header.ContentLength(); n >= 0 && n < limit {
		hint = n + 1 // room to see the end
	}
	var buf []byte
	for {
		if len(buf) == cap(buf) {
			if len(buf) > limit {
				return nil, ErrOverLimit
			}
			size := min(max(2*cap(buf), 32<<10), hint, limit+1)
			if size <= cap(buf) {
				size = min(2*cap(buf), limit+1) // the hint was short: the body is longer than declared
			}
			if err := sh.take(int64(size)); err != nil {
				c.Set(fiber.HeaderRetryAfter, "1")
				return nil, err
			}
			grown := make([]byte, len(buf), size)
			copy(grown, buf)
			sh.give(int64(cap(buf)))
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case len(buf) > limit:
			return nil, ErrOverLimit
		case errors.Is(err, io.EOF):
			return buf, nil
		case err != nil:
			return nil, err
		}
	}
}

// unbounded is the budget of a ReadBody outside the server's middleware.
var unbounded = NewBudget(1<<62, -1, nil)
