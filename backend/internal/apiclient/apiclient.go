// Package apiclient is a typed client of a running backend's /api/metrics
// routes: the live snapshot, the bench history and the events intake. The
// CLI's client subcommands (snapshot, bench list/show/compare/forget/import,
// events replay) are built on it.
//
// A non-2xx answer is an *Error carrying the API's
// {"error":{"message","type"}} message; a run Import finds already in
// history is also ErrAlreadyKept.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/ingest"
	"github.com/mlx-bun/mlx-metrics/shared/apierror"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/routes"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// MaxAnswerBytes bounds what the client reads of one answer; a longer one
// is an error.
const MaxAnswerBytes = 64 << 20

// DefaultTimeout is the whole-request timeout of the default HTTP client.
const DefaultTimeout = 30 * time.Second

// ErrAlreadyKept is what Import answers, wrapped with the *Error, when the
// backend already holds the run in history (409): the run is left as it is.
var ErrAlreadyKept = errors.New("run already in history")

// Options configure a Client; the zero value is the defaults.
type Options struct {
	// Token is sent as "Authorization: Bearer TOKEN" on the requests that
	// change something (Forget, Import, PostEvents). Default: none.
	Token string
	// HTTPClient sends the requests. Default: an http.Client with a
	// DefaultTimeout (30 s) timeout.
	HTTPClient *http.Client
}

// Client calls one backend. It is safe for concurrent use.
type Client struct {
	base      string // scheme://host[:port][/path], no trailing slash
	token     string
	http      *http.Client
	maxAnswer int64 // MaxAnswerBytes; less in tests
}

// New makes a client of the backend at server, an http(s) URL such as
// http://127.0.0.1:7878 (a path in it is kept, for a backend behind a
// proxy under a prefix).
func New(server string, opts Options) (*Client, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server %q: want an http(s) URL such as http://127.0.0.1:7878", server)
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	return &Client{
		base:  strings.TrimSuffix(u.Scheme+"://"+u.Host+u.Path, "/"),
		token: opts.Token,
		http:  hc,

		maxAnswer: MaxAnswerBytes,
	}, nil
}

// Error is a non-2xx answer.
type Error struct {
	Method string // GET, POST, DELETE
	Path   string // under routes.Prefix, with the query: "/history/ID"
	Status int    // the HTTP status
	// Message is the API's error message, or the status line when the
	// answer held none (a proxy's HTML page, say).
	Message string
	Type    string // the API's error type ("invalid_request_error"), if any
}

func (e *Error) Error() string {
	if e.Message == http.StatusText(e.Status) || strings.HasSuffix(e.Message, http.StatusText(e.Status)) {
		return fmt.Sprintf("%s %s: %s", e.Method, e.Path, e.Message)
	}
	return fmt.Sprintf("%s %s: %s (%d)", e.Method, e.Path, e.Message, e.Status)
}

// Snapshot is the live snapshot, decoded.
func (c *Client) Snapshot(ctx context.Context) (snapshot.Snapshot, error) {
	var s snapshot.Snapshot
	err := c.do(ctx, http.MethodGet, "/snapshot", "", nil, &s)
	return s, err
}

// SnapshotJSON is the live snapshot as the backend sent it.
func (c *Client) SnapshotJSON(ctx context.Context) (json.RawMessage, error) {
	var raw json.RawMessage
	err := c.do(ctx, http.MethodGet, "/snapshot", "", nil, &raw)
	return raw, err
}

// History lists the newest limit finished runs, newest first, with the
// entries the backend could not read as problems.
func (c *Client) History(ctx context.Context, limit int) (bench.HistoryList, error) {
	var l bench.HistoryList
	err := c.do(ctx, http.MethodGet, historyPath(limit), "", nil, &l)
	return l, err
}

// HistoryJSON is History's answer as the backend sent it.
func (c *Client) HistoryJSON(ctx context.Context, limit int) (json.RawMessage, error) {
	var raw json.RawMessage
	err := c.do(ctx, http.MethodGet, historyPath(limit), "", nil, &raw)
	return raw, err
}

func historyPath(limit int) string { return "/history?limit=" + strconv.Itoa(limit) }

// HistoryEntry is one finished run.
func (c *Client) HistoryEntry(ctx context.Context, id string) (bench.HistoryEntry, error) {
	var v bench.RunView
	err := c.do(ctx, http.MethodGet, entryPath(id), "", nil, &v)
	return v.Entry(), err
}

// HistoryEntryJSON is HistoryEntry's answer as the backend sent it.
func (c *Client) HistoryEntryJSON(ctx context.Context, id string) (json.RawMessage, error) {
	var raw json.RawMessage
	err := c.do(ctx, http.MethodGet, entryPath(id), "", nil, &raw)
	return raw, err
}

func entryPath(id string) string { return "/history/" + url.PathEscape(id) }

// Forget removes one run from history, readable or not; its run directory
// stays on disk.
func (c *Client) Forget(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, entryPath(id), "", nil, nil)
}

// Start starts a bench-serve job from the profile (a plan in the
// backend's plans directory) and returns it, queued or running.
func (c *Client) Start(ctx context.Context, profile string) (bench.JobView, error) {
	body, _ := json.Marshal(map[string]string{"profile": profile})
	var j bench.JobView
	err := c.do(ctx, http.MethodPost, "/bench", "application/json", body, &j)
	return j, err
}

// Cancel stops a queued or running job and returns it: cancelled, or
// stopping (its runner ends its servers and writes its record first), or
// as it ended if it had.
func (c *Client) Cancel(ctx context.Context, id string) (bench.JobView, error) {
	var j bench.JobView
	err := c.do(ctx, http.MethodDelete, "/bench/"+url.PathEscape(id), "", nil, &j)
	return j, err
}

// Import keeps a run recorded outside serve: runJSON is its run.json,
// runDirectory the directory that holds it. A run already in history is
// left as it is, and the error is ErrAlreadyKept (with the *Error).
func (c *Client) Import(ctx context.Context, runJSON []byte, runDirectory string) (bench.HistoryEntry, error) {
	var v bench.RunView
	err := c.do(ctx, http.MethodPost, "/history?runDirectory="+url.QueryEscape(runDirectory),
		"application/json", runJSON, &v)
	e := v.Entry()
	var ae *Error
	if errors.As(err, &ae) {
		ae.Path = "/history" // the run directory in the query is the caller's to say
		if ae.Status == http.StatusConflict {
			return e, fmt.Errorf("%w: %w", ErrAlreadyKept, err)
		}
	}
	return e, err
}

// PostEvents sends serving events, NDJSON (one event a line), and returns
// the backend's count of what it accepted and why it rejected the rest.
// When it accepted none the answer is a 400, an *Error.
func (c *Client) PostEvents(ctx context.Context, ndjson []byte) (ingest.Reply, error) {
	var r ingest.Reply
	err := c.do(ctx, http.MethodPost, strings.TrimPrefix(routes.Events, routes.Prefix), "application/x-ndjson", ndjson, &r)
	return r, err
}

// do sends a request to path under routes.Prefix, with body of
// contentType when body is not nil, and decodes a 2xx JSON answer into out
// (when not nil). The token goes on every method but GET.
func (c *Client) do(ctx context.Context, method, path, contentType string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+routes.Prefix+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if c.token != "" && method != http.MethodGet {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("is the backend running? %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, c.maxAnswer+1))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if int64(len(b)) > c.maxAnswer {
		return fmt.Errorf("%s %s: answer over %d MiB", method, path, c.maxAnswer>>20)
	}
	if resp.StatusCode/100 != 2 {
		e := &Error{Method: method, Path: path, Status: resp.StatusCode, Message: resp.Status}
		var ab apierror.Body
		if json.Unmarshal(b, &ab) == nil && ab.Error.Message != "" {
			e.Message, e.Type = ab.Error.Message, ab.Error.Type
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: unreadable answer: %w", method, path, err)
	}
	return nil
}
