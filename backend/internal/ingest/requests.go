package ingest

import (
	"strings"
	"sync"
	"time"
)

// Requests remembers which source reported each recent request, so that
// one request the proxy and another source both report counts once: a
// proxy (--proxy-to) in front of a server that publishes its own events
// (`engine --publish`, a host) sees every request the server reports. The
// second report of a request id within the window, the proxy's or the
// server's, is a duplicate: counted, not published. Only a pair with the
// proxy in it is one: two hosts may well number their requests alike, and
// a source that repeats itself is the follower's resume to handle.
//
// Request ids are compared without OpenAI's object prefixes (cmpl-,
// chatcmpl-): an answer's id is the server's request id under that prefix
// (the reference engine's sim-7 answers as cmpl-sim-7, vLLM's as
// cmpl-<uuid>), and the proxy reports the answer's.
type Requests struct {
	window time.Duration
	max    int

	mu    sync.Mutex
	seen  map[string]seenRequest
	order []string // ids in the order seen, for expiry and the bound
}

type seenRequest struct {
	source string
	at     time.Time
}

// Defaults of NewRequests.
const (
	DefaultRequestWindow = 2 * time.Minute
	DefaultMaxRequests   = 100_000
)

// ProxySource is the proxy's source name: its reports and another
// source's of one request are one request.
const ProxySource = "proxy"

// NewRequests remembers request ids for window (DefaultRequestWindow when
// 0), at most max of them (DefaultMaxRequests when 0; the oldest go first),
// so memory stays bounded whatever a producer sends.
func NewRequests(window time.Duration, max int) *Requests {
	if window <= 0 {
		window = DefaultRequestWindow
	}
	if max <= 0 {
		max = DefaultMaxRequests
	}
	return &Requests{window: window, max: max, seen: map[string]seenRequest{}}
}

// requestKey is id without an OpenAI object prefix.
func requestKey(id string) string {
	for _, p := range [...]string{"chatcmpl-", "cmpl-"} {
		if k, ok := strings.CutPrefix(id, p); ok {
			return k
		}
	}
	return id
}

// Duplicate reports whether the request id, reported now by source, was
// reported by another source within the window, naming it; otherwise it
// remembers the report.
func (r *Requests) Duplicate(source, id string, now time.Time) (other string, dup bool) {
	if id == "" {
		return "", false
	}
	key := requestKey(id)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(now)
	if s, ok := r.seen[key]; ok {
		if (s.source == ProxySource) != (source == ProxySource) {
			return s.source, true
		}
		return "", false
	}
	if len(r.order) >= r.max {
		delete(r.seen, r.order[0])
		r.order = r.order[1:]
	}
	r.seen[key] = seenRequest{source: source, at: now}
	r.order = append(r.order, key)
	return "", false
}

// expire forgets the ids seen more than the window before now.
func (r *Requests) expire(now time.Time) {
	n := 0
	for n < len(r.order) {
		k := r.order[n]
		if s, ok := r.seen[k]; ok && now.Sub(s.at) < r.window {
			break
		}
		delete(r.seen, k)
		n++
	}
	// Resliced, not copied down: expiring one id an event must not move
	// the whole list. append reallocates once the front's slack is spent,
	// copying only the live ids, so this stays amortised O(1).
	r.order = r.order[n:]
}
