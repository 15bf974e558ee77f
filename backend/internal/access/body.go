package access

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
)

// bodyTypes are the media types a change may carry: the API takes JSON,
// and POST /events NDJSON under any of its names. Refusing the rest (the
// form and text/plain types a page may post without a preflight) is half of
// the CSRF defence; the Origin check is the other.
var bodyTypes = map[string]bool{
	"application/json":     true,
	"application/x-ndjson": true,
	"application/ndjson":   true,
	"application/jsonl":    true,
	"application/x-jsonl":  true,
}

// checkContentType refuses a body of any other type (415). A change with
// no body and no Content-Type passes, and so does a DELETE with no body
// whatever type it names (some clients name one anyway).
func checkContentType(c *fiber.Ctx) error {
	ct := c.Get(fiber.HeaderContentType)
	if len(c.Request().Body()) == 0 && (ct == "" || c.Method() == fiber.MethodDelete) {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || !bodyTypes[mt] {
		return fiber.NewError(fiber.StatusUnsupportedMediaType, "send the body as application/json or application/x-ndjson")
	}
	return nil
}

// decodeBody undoes a Content-Encoding (gzip, deflate, br) within MaxBody
// bytes and the server's budget for bodies, streaming the inflate so that
// a small bomb cannot grow past the bound, and leaves the plain body in
// the request for the handler. Fiber's own Ctx.Body would inflate it
// whole. At most MaxDecodes run at once, so that many small bombs sent
// together cannot add up past a bound either.
func (g *Guard) decodeBody(c *fiber.Ctx) error {
	enc := strings.ToLower(strings.TrimSpace(c.Get(fiber.HeaderContentEncoding)))
	if enc == "" || enc == "identity" {
		return nil
	}
	select {
	case g.decoding <- struct{}{}:
		defer func() { <-g.decoding }()
	default:
		c.Set(fiber.HeaderRetryAfter, "1")
		return fiber.NewError(fiber.StatusServiceUnavailable, fmt.Sprintf(
			"%d compressed bodies are being inflated already: send it again in a second, or uncompressed", cap(g.decoding)))
	}
	max := g.opts.MaxBody
	r, err := decoder(enc, c.Request().Body())
	if err != nil {
		return err
	}
	// Read within the server's budget for bodies, as the body itself was.
	out, err := server.ReadBody(c, r, max, -1) // its inflated length is unknown
	var fe *fiber.Error
	switch {
	case errors.Is(err, server.ErrOverLimit):
		return fiber.NewError(fiber.StatusRequestEntityTooLarge, "the body inflates past the limit of "+server.Size(max))
	case errors.As(err, &fe):
		return fe // 503: the budget is spent
	case err != nil:
		return fiber.NewError(fiber.StatusBadRequest, "the body is not valid "+enc)
	}
	c.Request().SetBodyRaw(out)
	c.Request().Header.Del(fiber.HeaderContentEncoding)
	return nil
}

// decoder is the inflating reader of raw in encoding enc (lower case), or
// the error to answer: 415 for an encoding it does not take, 400 for a
// header that is not valid.
func decoder(enc string, raw []byte) (io.Reader, error) {
	switch enc {
	case "gzip", "x-gzip":
		r, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fiber.NewError(fiber.StatusBadRequest, "the body is not valid "+enc)
		}
		return r, nil
	case "deflate":
		// RFC 9110 deflate is zlib-wrapped; some clients send it raw.
		if r, err := zlib.NewReader(bytes.NewReader(raw)); err == nil {
			return r, nil
		}
		return flate.NewReader(bytes.NewReader(raw)), nil
	case "br":
		return brotli.NewReader(bytes.NewReader(raw)), nil
	}
	return nil, fiber.NewError(fiber.StatusUnsupportedMediaType, "unsupported Content-Encoding: send the body plain, or as one of gzip, deflate, br")
}
