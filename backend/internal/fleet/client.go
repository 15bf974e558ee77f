// Package fleet is the fleet view: the figures of every serving host, read
// from a Prometheus-compatible query API (Prometheus, Thanos, Mimir,
// VictoriaMetrics: /api/v1/query) that scrapes them, with PromQL over this
// module's own exposition. Nothing is aggregated here that the query engine
// can do; this package asks, bounds the answers and shapes them.
package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/printable"
)

// Options configure a Client. The zero value is the defaults.
type Options struct {
	// BearerToken, or else Username and Password (basic auth), are sent
	// with every query (serve reads them from the environment).
	BearerToken        string
	Username, Password string
	// Timeout bounds one query, and a Service's whole view
	// (DefaultTimeout).
	Timeout time.Duration
	// MaxAnswer bounds the bytes of one answer (DefaultMaxAnswer).
	MaxAnswer int64
	// HTTP makes the requests (a client of its own when nil).
	HTTP *http.Client
}

// Defaults of Options.
const (
	DefaultTimeout   = 10 * time.Second
	DefaultMaxAnswer = 8 << 20
)

// Client queries one Prometheus-compatible API.
type Client struct {
	base string // the API root: http://host:9090 (…/api/v1/query is added)
	opts Options
}

// NewClient returns a client of the query API at base, an http(s) URL
// without credentials (give them in opts).
func NewClient(base string, opts Options) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("want an http(s)://host[:port][/path] URL of a Prometheus-compatible query API, without credentials, query or fragment")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxAnswer <= 0 {
		opts.MaxAnswer = DefaultMaxAnswer
	}
	if opts.HTTP == nil {
		opts.HTTP = &http.Client{}
	}
	return &Client{base: strings.TrimRight(u.String(), "/"), opts: opts}, nil
}

// URL is the API's root, as given.
func (c *Client) URL() string { return c.base }

// Timeout is the bound of one query (Options.Timeout).
func (c *Client) Timeout() time.Duration { return c.opts.Timeout }

// Sample is one series of an instant vector.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Error kinds: what the panel says of a failed query.
const (
	KindUnreachable = "unreachable" // no answer: refused, DNS, TLS
	KindTimeout     = "timeout"     // no answer within the timeout
	KindStatus      = "status"      // an HTTP error status (4xx, 5xx)
	KindGarbage     = "garbage"     // an answer that is not the API's JSON, or too large
	KindQuery       = "query"       // the API refused the query
)

// QueryError is a failed query: its kind and a bounded message.
type QueryError struct {
	Kind    string
	Status  int // the HTTP status, for KindStatus
	Message string
}

func (e *QueryError) Error() string { return e.Message }

// maxMessage bounds what an error quotes of an answer.
const maxMessage = 200

func clip(s string) string {
	s = strings.ToValidUTF8(s, "")
	if len(s) > maxMessage {
		s = strings.ToValidUTF8(s[:maxMessage], "") + "…"
	}
	return s
}

// Query evaluates expr at now. warnings are the API's own (a partial
// answer: a store or a shard did not answer).
func (c *Client) Query(ctx context.Context, expr string) (samples []Sample, warnings []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	form := url.Values{"query": {expr}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/api/v1/query", strings.NewReader(form.Encode()))
	if err != nil {
		return nil, nil, &QueryError{Kind: KindUnreachable, Message: clip(err.Error())}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	switch {
	case c.opts.BearerToken != "":
		req.Header.Set("Authorization", "Bearer "+c.opts.BearerToken)
	case c.opts.Username != "":
		req.SetBasicAuth(c.opts.Username, c.opts.Password)
	}
	res, err := c.opts.HTTP.Do(req)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, nil, &QueryError{Kind: KindTimeout, Message: fmt.Sprintf("no answer within %s", c.opts.Timeout)}
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is the configured one; the cause is what to say
		}
		return nil, nil, &QueryError{Kind: KindUnreachable, Message: "unreachable: " + clip(err.Error())}
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, c.opts.MaxAnswer+1))
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, nil, &QueryError{Kind: KindTimeout, Message: fmt.Sprintf("no whole answer within %s", c.opts.Timeout)}
		}
		return nil, nil, &QueryError{Kind: KindUnreachable, Message: "the answer broke off: " + clip(err.Error())}
	}
	if int64(len(body)) > c.opts.MaxAnswer {
		return nil, nil, &QueryError{Kind: KindGarbage, Message: fmt.Sprintf("an answer over %d bytes", c.opts.MaxAnswer)}
	}
	var r struct {
		Status    string   `json:"status"`
		ErrorType string   `json:"errorType"`
		Error     string   `json:"error"`
		Warnings  []string `json:"warnings"`
		Data      struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	decodeErr := json.Unmarshal(body, &r)
	switch {
	case res.StatusCode >= 400 && (decodeErr != nil || r.Error == ""):
		return nil, nil, &QueryError{Kind: KindStatus, Status: res.StatusCode,
			Message: fmt.Sprintf("HTTP %d %s", res.StatusCode, clip(strings.TrimSpace(string(body))))}
	case decodeErr != nil || (r.Status != "success" && r.Status != "error"):
		return nil, nil, &QueryError{Kind: KindGarbage, Message: "not a Prometheus API answer: " + clip(strings.TrimSpace(string(body)))}
	case r.Status == "error":
		kind := KindQuery
		if res.StatusCode >= 500 {
			kind = KindStatus
		}
		return nil, nil, &QueryError{Kind: kind, Status: res.StatusCode, Message: clip(r.ErrorType + ": " + r.Error)}
	}
	for i, w := range r.Warnings {
		if i == 10 {
			break
		}
		warnings = append(warnings, clip(w))
	}
	samples, more, err := decodeVector(r.Data.ResultType, r.Data.Result)
	if err != nil {
		return nil, warnings, &QueryError{Kind: KindGarbage, Message: clip(err.Error())}
	}
	if more > 0 {
		warnings = append(warnings, fmt.Sprintf("the store answered %d series more than the %d kept", more, MaxSeries))
	}
	return samples, warnings, nil
}

// Bounds of one answer's vector, beside MaxAnswer's bytes: a store of many
// series, or a target inventing label values, must not make a view hold
// them all (100,000 small series fit in 8 MiB and cost a gigabyte).
const (
	// MaxSeries is how many series of one answer a view keeps; the rest
	// are left out, with a warning.
	MaxSeries = 1000
	// maxSeriesBytes bounds one series, encoded: its labels.
	maxSeriesBytes = 16 << 10
	// maxLabel bounds a label's name or value shown.
	maxLabel = 256
)

// decodeVector reads an instant query's result: a vector (its first
// MaxSeries series; more says how many were left out), or a scalar as one
// sample. Its labels are cleaned (cleanLabels). It streams the vector
// rather than using client_golang's api/prometheus/v1, which decodes a
// whole answer into a model.Vector before anyone can count its series.
// With MaxAnswer as a RoundTripper memory would be bounded either way,
// but by about three times as much: an answer of the default 8 MiB cost
// v1 (client_golang 1.25) 156 MiB allocated and about 82 MiB of peak heap
// for its 98,949 two-label series, where this decoder allocates 45 MiB and
// peaks near 29 MiB keeping 1,000 (eight labels: 114 and 64 MiB against
// 43 and 32), and a view runs four queries at once. v1 would also need
// glue to say what it answers now: it keeps a 5xx's status only in its
// message and parses no API error out of it, asks a 403 again as a GET,
// and collapses a series' repeated labels before maxSeriesBytes could see
// them.
func decodeVector(typ string, raw json.RawMessage) (out []Sample, more int, err error) {
	switch typ {
	case "vector":
		dec := json.NewDecoder(bytes.NewReader(raw))
		if t, err := dec.Token(); err != nil || t != json.Delim('[') {
			return nil, 0, fmt.Errorf("an unreadable vector: not an array")
		}
		for dec.More() {
			var elem json.RawMessage
			if err := dec.Decode(&elem); err != nil {
				return nil, 0, fmt.Errorf("an unreadable vector: %v", err)
			}
			if len(out) == MaxSeries {
				more++
				continue
			}
			if len(elem) > maxSeriesBytes {
				return nil, 0, fmt.Errorf("a series of %d bytes, over %d", len(elem), maxSeriesBytes)
			}
			var v struct {
				Metric map[string]string  `json:"metric"`
				Value  [2]json.RawMessage `json:"value"`
			}
			if err := json.Unmarshal(elem, &v); err != nil {
				return nil, 0, fmt.Errorf("an unreadable vector: %v", err)
			}
			f, err := value(v.Value[1])
			if err != nil {
				return nil, 0, err
			}
			out = append(out, Sample{Labels: cleanLabels(v.Metric), Value: f})
		}
		if out == nil {
			out = []Sample{}
		}
		return out, more, nil
	case "scalar":
		var v [2]json.RawMessage
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, 0, fmt.Errorf("an unreadable scalar: %v", err)
		}
		f, err := value(v[1])
		if err != nil {
			return nil, 0, err
		}
		return []Sample{{Value: f}}, 0, nil
	}
	return nil, 0, fmt.Errorf("a %q result, want a vector", clip(typ))
}

// cleanLabels is m with each name and value made safe to show
// (printable.Cut to maxLabel bytes).
func cleanLabels(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[printable.Cut(k, maxLabel)] = printable.Cut(v, maxLabel)
	}
	return out
}

// value reads a sample's value, a string holding a float ("NaN" and
// "+Inf" among them).
func value(raw json.RawMessage) (float64, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf("a sample value %s is not a string", clip(string(raw)))
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("a sample value %q is not a number", clip(s))
	}
	return f, nil
}

// finite is v, or nil where it is NaN or infinite (JSON has neither).
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
