package access

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"
)

// ParseOrigins checks and normalises CORS origins: each a scheme and host
// with an optional port, no path; "*" allows every origin.
func ParseOrigins(in []string) ([]string, error) {
	var out []string
	for _, o := range in {
		o = strings.TrimRight(strings.TrimSpace(o), "/")
		if o == "" {
			continue
		}
		if o != "*" {
			scheme, rest, ok := strings.Cut(o, "://")
			if !ok || (scheme != "http" && scheme != "https") || rest == "" || strings.ContainsAny(rest, "/?#@ ") {
				return nil, errors.New("cors origin " + o + ": want scheme://host[:port], e.g. http://localhost:3000")
			}
			o = strings.ToLower(o)
		}
		out = append(out, o)
	}
	return out, nil
}

// IsLoopbackHost reports whether a Host header names this machine's
// loopback: localhost, 127.0.0.0/8 or [::1], with or without a port. A name
// that merely resolves there (a rebound DNS name) is not one.
func IsLoopbackHost(host string) bool {
	h := strings.ToLower(host)
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 || (end+1 < len(h) && !validPort(h[end+1:])) {
			return false
		}
		h = h[1:end]
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 {
		if !validPort(h[i:]) {
			return false
		}
		h = h[:i]
	}
	if h == "localhost" || h == "localhost." {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// validPort is ":" and up to five digits.
func validPort(s string) bool {
	if len(s) < 2 || len(s) > 6 || s[0] != ':' {
		return false
	}
	for _, r := range s[1:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// Resolver looks a name's addresses up; net.DefaultResolver is one.
type Resolver interface {
	LookupHost(ctx context.Context, host string) ([]string, error)
}

// ResolveTimeout bounds IsLoopbackAddr's look-up of a name.
const ResolveTimeout = 5 * time.Second

// IsLoopbackAddr reports whether a listen address (host:port) binds only
// loopback: a loopback IP, localhost, or a name all of whose addresses
// (looked up once with r, within ResolveTimeout) are loopback, such as
// one /etc/hosts gives 127.0.1.1. A name with any other address, or none
// in time, is not: Listen binds one of its addresses, whichever. An
// empty host binds every interface.
func IsLoopbackAddr(ctx context.Context, r Resolver, addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	ctx, cancel := context.WithTimeout(ctx, ResolveTimeout)
	defer cancel()
	addrs, err := r.LookupHost(ctx, host)
	if err != nil || len(addrs) == 0 {
		return false
	}
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip == nil || !ip.IsLoopback() {
			return false
		}
	}
	return true
}
