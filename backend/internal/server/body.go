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
// (bounds) and the server's Budget, before any route's handler runs:
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

func (s *share) take(n int64, wait bool) error {
	if !s.b.take(n, wait) {
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
		req := c.Request()
		length := declared(&req.Header)
		if length < 0 && !req.IsBodyStream() {
			return c.Next() // no body (most GETs): nothing to bound or hold
		}
		limit := b.limit(&req.Header)
		if length > int64(limit) {
			c.Response().SetConnectionClose()
			return fiber.NewError(fiber.StatusRequestEntityTooLarge, b.tooLarge())
		}
		if !req.IsBodyStream() {
			return c.Next()
		}
		sh := &share{b: budget}
		c.Locals(shareKey{}, sh)
		defer func() { sh.give(sh.n) }()
		body, err := ReadBody(c, req.BodyStream(), limit, req.Header.ContentLength())
		if err != nil {
			if !refusedForBudget(err) || !drain(req.BodyStream(), limit) {
				c.Response().SetConnectionClose()
			}
			return bodyError(err, b.tooLarge())
		}
		req.SetBodyRaw(body)
		return c.Next()
	}
}

// refusedForBudget reports whether ReadBody's err is the budget's 503.
func refusedForBudget(err error) bool {
	var fe *fiber.Error
	return errors.As(err, &fe) && fe.Code == fiber.StatusServiceUnavailable
}

// drain reads the rest of a body refused for want of budget into nothing,
// within the body's limit and the read timeout, and reports whether it
// reached the end. A client still sending when the connection closed
// would have it reset, and lose the 503 that says to send again.
func drain(r io.Reader, limit int) bool {
	n, err := io.Copy(io.Discard, io.LimitReader(r, int64(limit)+1))
	return err == nil && n <= int64(limit)
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

// firstShare is the most of a body read before its whole declared length
// is taken from the budget: a client must send this much to have the rest
// set aside. A body of unknown length (chunked, or inflating) grows by
// doubling instead, and may wait for the budget only while it holds at
// most this much: bodies that each hold part of the budget and wait for
// more would starve one another (with every body waiting at each growth,
// 128 bodies of 32 MiB at once were all refused).
const firstShare = 1 << 20

// ReadBody reads r to its end if that is at most limit bytes, taking its
// buffer from the server's budget (the request gives it back when its
// handlers have returned); else it stops after limit+1 bytes with
// ErrOverLimit. size is the length the body declares, -1 when unknown: a
// declared body is read into one buffer of its length once firstShare of
// it has arrived, any other into a buffer that doubles as it fills, never
// past limit+1. When the budget cannot cover the next buffer, the answer
// is a 503 with Retry-After (a *fiber.Error). A request that did not come
// through the server's middleware reads within limit alone.
func ReadBody(c *fiber.Ctx, r io.Reader, limit, size int) ([]byte, error) {
	sh, _ := c.Locals(shareKey{}).(*share)
	if sh == nil {
		sh = &share{b: unbounded}
		defer func() { sh.give(sh.n) }() // no request to give it back at its end
	}
	var buf []byte
	for {
		if len(buf) == cap(buf) {
			if len(buf) > limit {
				return nil, ErrOverLimit
			}
			grow := min(max(2*cap(buf), 32<<10), limit+1)
			switch {
			case size >= 0 && size <= limit && len(buf) < firstShare:
				grow = min(size+1, firstShare) // +1: room to see the end
			case size >= 0 && size <= limit && len(buf) <= size:
				grow = size + 1
			}
			if err := sh.take(int64(grow), sh.n <= firstShare); err != nil {
				c.Set(fiber.HeaderRetryAfter, "1")
				return nil, err
			}
			grown := make([]byte, len(buf), grow)
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
