package server

import (
	"bytes"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// checkFraming refuses a request whose header a proxy in front of this
// server could read as framed differently from fasthttp, and so see
// another request inside its body (request smuggling; RFC 9112 sections
// 3.2, 6.1 and 6.3): several Content-Length lines (fasthttp reads the
// last), Content-Length beside Transfer-Encoding, a transfer coding other
// than chunked (fasthttp reads any as chunked), several Host lines
// (fasthttp reads the last), none in HTTP/1.1, Transfer-Encoding in
// HTTP/1.0, and lines other readers may split or join otherwise
// (unclearLines). The connection closes after the refusal: what follows
// on it may be read one way or another. Such a request's body is not
// waited for either (refuseBody).
func checkFraming(c *fiber.Ctx) error {
	if err := framingError(&c.Request().Header); err != nil {
		c.Response().SetConnectionClose()
		return err
	}
	return nil
}

// framingError is why checkFraming refuses h, nil when it does not.
func framingError(h *fasthttp.RequestHeader) *fiber.Error {
	raw := h.RawHeaders()
	lengths := headerValues(raw, "content-length")
	codings := headerValues(raw, "transfer-encoding")
	hosts := len(headerValues(raw, "host"))
	switch {
	case unclearLines(raw):
		// A reader that splits lines at a bare CR, or stops at a NUL, or
		// does not unfold, sees other fields than fasthttp (RFC 9112
		// sections 2.2 and 5.2 allow refusing each).
		return fiber.NewError(fiber.StatusBadRequest, "a header line folded onto the next, or holding a bare CR or a NUL")
	case len(codings) > 0 && !h.IsHTTP11():
		// RFC 9112 section 6.1: faulty framing in HTTP/1.0, whose readers
		// may not know Transfer-Encoding.
		return fiber.NewError(fiber.StatusBadRequest, "Transfer-Encoding in an HTTP/1.0 request: send a Content-Length")
	case len(codings) > 0 && len(lengths) > 0:
		return fiber.NewError(fiber.StatusBadRequest, "both Content-Length and Transfer-Encoding: send one")
	case len(lengths) > 1:
		return fiber.NewError(fiber.StatusBadRequest, "more than one Content-Length header")
	case len(codings) > 1 || len(codings) == 1 && !bytes.EqualFold(codings[0], []byte("chunked")):
		return fiber.NewError(fiber.StatusNotImplemented, "a Transfer-Encoding other than chunked: send the body with a Content-Length, or chunked")
	case hosts > 1:
		return fiber.NewError(fiber.StatusBadRequest, "more than one Host header")
	case h.IsHTTP11() && hosts == 0:
		// RFC 9112 section 3.2: a 400, not the access guard's 403.
		return fiber.NewError(fiber.StatusBadRequest, "an HTTP/1.1 request without a Host header")
	}
	return nil
}

// refuseBody reports whether checkFraming will refuse h, so that none of
// its body is read or waited for (a last length of 0 would have the bytes
// after the header read as the next request; a chunked body would be
// waited for): bounds.config then tells fasthttp it has none, and
// checkFraming answers before any route, closing the connection.
func refuseBody(h *fasthttp.RequestHeader) bool { return framingError(h) != nil }

// unclearLines says whether a raw header block has a line folded onto the
// one before it (obs-fold), a CR not before an LF, or a NUL.
func unclearLines(raw []byte) bool {
	for i, b := range raw {
		switch {
		case b == 0, b == '\r' && (i+1 == len(raw) || raw[i+1] != '\n'):
			return true
		case (b == ' ' || b == '\t') && i > 0 && raw[i-1] == '\n':
			return true
		}
	}
	return false
}

// headerValues are the values of the lines of a raw header block whose
// name is name (lower case), without the line's CR and the blanks around
// them: SP and HTAB alone (RFC 9112 section 5.6.3's OWS). A value with
// \v or \f around it stays unlike "chunked" and so is refused: another
// reader may trim them, or not.
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
			out = append(out, bytes.Trim(bytes.TrimSuffix(v, []byte("\r")), " \t"))
		}
	}
	return out
}
