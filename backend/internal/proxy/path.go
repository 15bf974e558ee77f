package proxy

import (
	"errors"
	"net/url"
	"strings"
	"unicode"

	"github.com/mlx-bun/mlx-metrics/shared/routes"
)

// The reasons a path is refused; neither echoes it.
var (
	errPathEncoding = errors.New("malformed percent-encoding or a control character in the path")
	errPathEscapes  = errors.New("the path leaves /v1")
)

// cleanPath resolves the dot segments of raw, a request path as sent (still
// percent-encoded), as RFC 3986 section 5.2.4 does, and refuses it unless
// what is left is /v1 or under /v1/. Dot segments count encoded too
// (%2e%2e), and a segment that decodes to dot parts around a slash or
// backslash (..%2f, ..%5c) is refused, so an upstream that decodes later
// cannot be walked out of /v1 either. It returns the path to forward, still
// encoded as the client sent it (an encoded slash in a model id stays
// encoded), and its decoded form, to match routes on.
func cleanPath(raw string) (forward, decoded string, err error) {
	if !strings.HasPrefix(raw, "/") {
		return "", "", errPathEscapes
	}
	segs := strings.Split(raw[1:], "/")
	out := make([]string, 0, len(segs))
	dec := make([]string, 0, len(segs))
	for i, seg := range segs {
		d, err := url.PathUnescape(seg)
		if err != nil || strings.IndexFunc(d, unicode.IsControl) >= 0 {
			return "", "", errPathEncoding
		}
		last := i == len(segs)-1
		switch d {
		case ".":
		case "..":
			if len(out) == 0 {
				return "", "", errPathEscapes
			}
			out, dec = out[:len(out)-1], dec[:len(dec)-1]
		default:
			if hasDotPart(d) {
				return "", "", errPathEscapes
			}
			out, dec = append(out, seg), append(dec, d)
			continue
		}
		if last { // a path ending in a dot segment names a directory
			out, dec = append(out, ""), append(dec, "")
		}
	}
	forward, decoded = "/"+strings.Join(out, "/"), "/"+strings.Join(dec, "/")
	if forward != routes.Proxy && !strings.HasPrefix(forward, routes.Proxy+"/") {
		return "", "", errPathEscapes
	}
	return forward, decoded, nil
}

// hasDotPart reports whether a decoded segment holding a slash or backslash
// has a . or .. between them.
func hasDotPart(d string) bool {
	if !strings.ContainsAny(d, `/\`) {
		return false
	}
	for _, part := range strings.FieldsFunc(d, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == "." || part == ".." {
			return true
		}
	}
	return false
}
