package server

import (
	"bytes"
	"math"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// checkFraming refuses a request whose header a proxy in front of this
// server could read as framed differently from fasthttp, and so see
// another request inside its body (request smuggling; RFC 9112 sections
// 3.2, 6.1 and 6.3): several Content-Length lines (fasthttp reads the
// last), Content-Length beside Transfer-Encoding, a transfer coding other
// than chunked (fasthttp reads any as chunked), several Host lines
// (fasthttp reads the last). The connection closes after the refusal:
// what follows on it may be read one way or another. Such a request's body
// is not waited for either (refuseBody).
func checkFraming(c *fiber.Ctx) error {
	if err := framingError(c.Request().Header.RawHeaders()); err != nil {
		c.Response().SetConnectionClose()
		return err
	}
	return nil
}

// framingError is why checkFraming refuses a raw header block, nil when it
// does not.
func framingError(raw []byte) *fiber.Error {
	lengths := headerValues(raw, "content-length")
	codings := headerValues(raw, "transfer-encoding")
	switch {
	case len(codings) > 0 && len(lengths) > 0:
		return fiber.NewError(fiber.StatusBadRequest, "both Content-Length and Transfer-Encoding: send one")
	case len(lengths) > 1:
		return fiber.NewError(fiber.StatusBadRequest, "more than one Content-Length header")
	case len(codings) > 1 || len(codings) == 1 && !bytes.EqualFold(codings[0], []byte("chunked")):
		return fiber.NewError(fiber.StatusNotImplemented, "a Transfer-Encoding other than chunked: send the body with a Content-Length, or chunked")
	case len(headerValues(raw, "host")) > 1:
		return fiber.NewError(fiber.StatusBadRequest, "more than one Host header")
	}
	return nil
}

// refuseBody has fasthttp refuse the body of a request checkFraming
// refuses before reading any of it, whatever its header says (a last
// length of 0 would have the bytes after the header read as the next
// request; a chunked body would be waited for): its length is set past
// the limit it gets, and the server's error handler answers the framing
// error instead of a 413, closing the connection. A request fasthttp
// reads no body for (GET, HEAD) reaches checkFraming.
func refuseBody(h *fasthttp.RequestHeader) bool {
	if framingError(h.RawHeaders()) == nil {
		return false
	}
	h.SetContentLength(math.MaxInt32) // also drops Transfer-Encoding: read by length, refused at once
	return true
}

// headerValues are the trimmed values of the lines of a raw header block
// whose name is name (lower case).
func headerValues(raw []byte, name string) [][]byte {
	var out [][]byte
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if ok && bytes.EqualFold(k, []byte(name)) {
			out = append(out, bytes.TrimSpace(v))
		}
	}
	return out
}
