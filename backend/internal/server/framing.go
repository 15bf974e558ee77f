package server

import (
	"bytes"

	"github.com/gofiber/fiber/v2"
)

// checkFraming refuses a request whose header a proxy in front of this
// server could read as framed differently from fasthttp, and so see
// another request inside its body (request smuggling; RFC 9112 sections
// 3.2, 6.1 and 6.3): several Content-Length lines (fasthttp reads the
// last), Content-Length beside Transfer-Encoding, a transfer coding other
// than chunked (fasthttp reads any as chunked), several Host lines
// (fasthttp reads the last). Where the body was read one way and could be
// read another, the connection is closed after the answer. Several
// lengths are refused without waiting for the body (misframed).
func checkFraming(c *fiber.Ctx) error {
	err, closes := framingError(c.Request().Header.RawHeaders())
	if closes {
		c.Response().SetConnectionClose()
	}
	if err != nil {
		return err
	}
	return nil
}

// framingError is why checkFraming refuses a raw header block, nil when it
// does not, and whether the connection must close after the answer.
func framingError(raw []byte) (err *fiber.Error, closes bool) {
	lengths := headerValues(raw, "content-length")
	codings := headerValues(raw, "transfer-encoding")
	switch {
	case len(lengths) > 1:
		return fiber.NewError(fiber.StatusBadRequest, "more than one Content-Length header"), false
	case len(codings) > 0 && len(lengths) > 0:
		return fiber.NewError(fiber.StatusBadRequest, "both Content-Length and Transfer-Encoding: send one"), true
	case len(codings) > 1 || len(codings) == 1 && !bytes.EqualFold(codings[0], []byte("chunked")):
		return fiber.NewError(fiber.StatusNotImplemented, "a Transfer-Encoding other than chunked: send the body with a Content-Length, or chunked"), true
	case len(headerValues(raw, "host")) > 1:
		return fiber.NewError(fiber.StatusBadRequest, "more than one Host header"), false
	}
	return nil, false
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
