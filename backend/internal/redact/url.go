package redact

import (
	"errors"
	"net/url"
)

// URL is raw as anyone may read it (/healthz is open): its password masked
// and its query, which may carry a token, left out ("?…"); a URL that does
// not parse is its host alone, or nothing.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	if u.RawQuery != "" {
		u.RawQuery = "…"
	}
	return u.Redacted()
}

// URLError is err's message without the URL a *url.Error (net/http's)
// quotes: the URL is said apart, through URL.
func URLError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}
