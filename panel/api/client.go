// Package api is the panel's client of the backend's bench and history
// routes. In the browser it calls fetch directly (fetch_js.go): linking
// net/http's client into the WebAssembly would cost about 1.2 MB gzip. In
// native tests the same client runs over net/http (fetch_other.go).
package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/fleet"
)

// Client talks to one backend's /api/metrics routes.
type Client struct {
	// Base is the API root, e.g. http://127.0.0.1:7878/api/metrics.
	Base string
	// Token, when set, is sent as "Authorization: Bearer <token>" with
	// every change (the backend's --token); reads need none.
	Token string
}

// maxBody bounds an answer the panel reads.
const maxBody = 8 << 20

// request is one call, as the transport sees it.
type request struct {
	method, url string
	body        []byte // JSON, or nil
	token       string // bearer token, or ""
}

// ErrUnreachable is a call that got no answer: the backend is down, or
// the network or the browser refused the request.
var ErrUnreachable = errors.New("cannot reach the backend")

// ErrTimeout is a call that got no answer before its context's deadline:
// said in words, not as Go's "context deadline exceeded".
var ErrTimeout = errors.New("no answer in time from the backend")

// HTTP methods, spelled once.
const (
	methodGet    = "GET"
	methodPost   = "POST"
	methodDelete = "DELETE"
)

// Error is a non-2xx answer: the API's error message when it sent one.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%d: %s", e.Status, e.Message)
}

// Profiles lists the plans a run can start from.
func (c *Client) Profiles(ctx context.Context) ([]bench.Profile, error) {
	var l bench.ProfileList
	err := c.do(ctx, methodGet, "/bench/profiles", nil, &l)
	return l.Profiles, err
}

// Jobs lists recent jobs and the GPU lease.
func (c *Client) Jobs(ctx context.Context) (bench.JobList, error) {
	var l bench.JobList
	return l, c.do(ctx, methodGet, "/bench", nil, &l)
}

// Start starts a run of profile.
func (c *Client) Start(ctx context.Context, profile string) (bench.Job, error) {
	var v bench.JobView
	err := c.do(ctx, methodPost, "/bench", map[string]string{"profile": profile}, &v)
	return v.Job(), err
}

// Cancel stops job id.
func (c *Client) Cancel(ctx context.Context, id string) (bench.Job, error) {
	var v bench.JobView
	err := c.do(ctx, methodDelete, "/bench/"+url.PathEscape(id), nil, &v)
	return v.Job(), err
}

// History lists up to limit finished runs, newest first.
func (c *Client) History(ctx context.Context, limit int) (bench.HistoryList, error) {
	var l bench.HistoryList
	err := c.do(ctx, methodGet, "/history?limit="+strconv.Itoa(limit), nil, &l)
	return l, err
}

// Entry fetches one finished run.
func (c *Client) Entry(ctx context.Context, id string) (bench.HistoryEntry, error) {
	var v bench.RunView
	err := c.do(ctx, methodGet, "/history/"+url.PathEscape(id), nil, &v)
	return v.Entry(), err
}

// Fleet reads the fleet view over rng (15m, 1h, 6h, 24h); Enabled is false
// on a backend without --fleet.
func (c *Client) Fleet(ctx context.Context, rng string) (fleet.View, error) {
	var v fleet.View
	return v, c.do(ctx, methodGet, "/fleet?range="+url.QueryEscape(rng), nil, &v)
}

// ReportURL is where a job's report.md is served.
func (c *Client) ReportURL(jobID string) string {
	return strings.TrimRight(c.Base, "/") + "/bench/" + url.PathEscape(jobID) + "/report"
}

// RequestsBase is where a job's load point files are served: a point's
// requestsFile, without its "requests/", follows it.
func (c *Client) RequestsBase(jobID string) string {
	return strings.TrimRight(c.Base, "/") + "/bench/" + url.PathEscape(jobID) + "/requests/"
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	req := request{method: method, url: strings.TrimRight(c.Base, "/") + path}
	if method != methodGet {
		req.token = c.Token
	}
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		req.body = b
	}
	status, data, err := send(ctx, req)
	if err != nil {
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return fmt.Errorf("%w at %s", ErrTimeout, c.Base)
		case ctx.Err() != nil:
			return ctx.Err()
		}
		return fmt.Errorf("%w at %s", ErrUnreachable, c.Base)
	}
	if status/100 != 2 {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		msg := strings.TrimSpace(string(data))
		if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		if len(msg) > 300 {
			// Cut on a character, not inside one.
			msg = strings.ToValidUTF8(msg[:300], "") + "…"
		}
		if msg == "" {
			msg = "HTTP status " + strconv.Itoa(status)
		}
		return &Error{Status: status, Message: msg}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: the backend's answer is not what the panel expects: %w", method, path, err)
	}
	return nil
}
