// Package api is the panel's client of the backend's bench and history
// routes. In the browser net/http rides on fetch, so the same client runs
// in the WebAssembly frame and in native tests.
package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// Client talks to one backend's /api/metrics routes.
type Client struct {
	// Base is the API root, e.g. http://127.0.0.1:7878/api/metrics.
	Base string
	HTTP *http.Client
}

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
	var ps []bench.Profile
	return ps, c.do(ctx, http.MethodGet, "/bench/profiles", nil, &ps)
}

// Jobs lists recent jobs and the GPU lease.
func (c *Client) Jobs(ctx context.Context) (bench.JobList, error) {
	var l bench.JobList
	return l, c.do(ctx, http.MethodGet, "/bench", nil, &l)
}

// Start starts a run of profile.
func (c *Client) Start(ctx context.Context, profile string) (bench.Job, error) {
	var j bench.Job
	return j, c.do(ctx, http.MethodPost, "/bench", map[string]string{"profile": profile}, &j)
}

// Cancel stops job id.
func (c *Client) Cancel(ctx context.Context, id string) (bench.Job, error) {
	var j bench.Job
	return j, c.do(ctx, http.MethodDelete, "/bench/"+url.PathEscape(id), nil, &j)
}

// History lists up to limit finished runs, newest first.
func (c *Client) History(ctx context.Context, limit int) ([]bench.HistoryEntry, error) {
	var l bench.HistoryList
	err := c.do(ctx, http.MethodGet, "/history?limit="+strconv.Itoa(limit), nil, &l)
	return l.Entries, err
}

// Entry fetches one finished run.
func (c *Client) Entry(ctx context.Context, id string) (bench.HistoryEntry, error) {
	var e bench.HistoryEntry
	return e, c.do(ctx, http.MethodGet, "/history/"+url.PathEscape(id), nil, &e)
}

// ReportURL is where a job's report.md is served.
func (c *Client) ReportURL(jobID string) string {
	return strings.TrimRight(c.Base, "/") + "/bench/" + url.PathEscape(jobID) + "/report"
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.Base, "/")+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
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
			msg = http.StatusText(res.StatusCode)
		}
		return &Error{Status: res.StatusCode, Message: msg}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode: %w", method, path, err)
	}
	return nil
}
