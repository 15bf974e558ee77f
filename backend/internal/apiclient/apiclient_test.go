package apiclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/apiclient"
	"github.com/mlx-bun/mlx-metrics/backend/internal/ingest"
	"github.com/mlx-bun/mlx-metrics/shared/apierror"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// request is what the fake backend saw.
type request struct {
	Method, URI, Auth, ContentType, Body string
}

// fakeBackend answers every request with one canned status and body, and
// records the request.
type fakeBackend struct {
	*httptest.Server
	mu     sync.Mutex
	status int
	body   string
	seen   request
}

func newFakeBackend(t *testing.T) *fakeBackend {
	t.Helper()
	fb := &fakeBackend{}
	fb.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fb.mu.Lock()
		defer fb.mu.Unlock()
		fb.seen = request{r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"), r.Header.Get("Content-Type"), string(b)}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(fb.status)
		io.WriteString(w, fb.body)
	}))
	t.Cleanup(fb.Close)
	return fb
}

func (fb *fakeBackend) answer(status int, body string) {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	fb.status, fb.body = status, body
}

func (fb *fakeBackend) request() request {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	return fb.seen
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMethods(t *testing.T) {
	fb := newFakeBackend(t)
	c, err := apiclient.New(fb.URL+"/", apiclient.Options{Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	entry := bench.HistoryEntry{ID: "20261202T100000Z-bbbb", Profile: "standard", Complete: true,
		StartedAt: 1764669600000, FinishedAt: 1764669660000, Problems: []string{},
		Cells: []bench.CompactCell{{Key: "qwen/tree/default", Status: "measured"}}}
	list := bench.HistoryList{Entries: []bench.HistoryEntry{entry},
		Problems: []bench.HistoryProblem{{ID: "x", Message: "unreadable entry"}}}
	snap := snapshot.Snapshot{At: 2000, StartedAt: 1000, Version: 42}
	reply := ingest.Reply{Accepted: 1, Rejected: 1, Errors: []ingest.Rejection{{Line: 2, Reason: "bad"}}}
	const snapJSON = `{"version":42,"newerField":"kept as sent"}`

	tests := []struct {
		name   string
		answer string // a 200's body
		call   func() (any, error)
		want   any
		seen   request
	}{
		{"snapshot", mustJSON(t, snap),
			func() (any, error) { return c.Snapshot(ctx) }, snap,
			request{Method: "GET", URI: "/api/metrics/snapshot"}},
		{"snapshot json as sent", snapJSON,
			func() (any, error) { b, err := c.SnapshotJSON(ctx); return string(b), err }, snapJSON,
			request{Method: "GET", URI: "/api/metrics/snapshot"}},
		{"history", mustJSON(t, list),
			func() (any, error) { return c.History(ctx, 5) }, list,
			request{Method: "GET", URI: "/api/metrics/history?limit=5"}},
		{"history json", `{"runs":[]}`,
			func() (any, error) { b, err := c.HistoryJSON(ctx, 7); return string(b), err }, `{"runs":[]}`,
			request{Method: "GET", URI: "/api/metrics/history?limit=7"}},
		{"history entry, id escaped", mustJSON(t, entry.View()),
			func() (any, error) { return c.HistoryEntry(ctx, "a/b c") }, entry,
			request{Method: "GET", URI: "/api/metrics/history/a%2Fb%20c"}},
		{"history entry json", `{"id":"x"}`,
			func() (any, error) { b, err := c.HistoryEntryJSON(ctx, "x"); return string(b), err }, `{"id":"x"}`,
			request{Method: "GET", URI: "/api/metrics/history/x"}},
		{"forget, with the token", `{}`,
			func() (any, error) { return nil, c.Forget(ctx, "20261202T100000Z-bbbb") }, nil,
			request{Method: "DELETE", URI: "/api/metrics/history/20261202T100000Z-bbbb", Auth: "Bearer tok"}},
		{"import", mustJSON(t, entry.View()),
			func() (any, error) { return c.Import(ctx, []byte(`{"run":1}`), "/runs/a b") }, entry,
			request{Method: "POST", URI: "/api/metrics/history?runDirectory=%2Fruns%2Fa+b", Auth: "Bearer tok",
				ContentType: "application/json", Body: `{"run":1}`}},
		{"post events", mustJSON(t, reply),
			func() (any, error) { return c.PostEvents(ctx, []byte("{}\n{}\n")) }, reply,
			request{Method: "POST", URI: "/api/metrics/events", Auth: "Bearer tok",
				ContentType: "application/x-ndjson", Body: "{}\n{}\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb.answer(http.StatusOK, tt.answer)
			got, err := tt.call()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v\nwant %#v", got, tt.want)
			}
			if seen := fb.request(); seen != tt.seen {
				t.Errorf("backend saw %+v\nwant %+v", seen, tt.seen)
			}
		})
	}
}

// unreachable is a 127.0.0.1 address nothing listens on.
func unreachable(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

func TestErrors(t *testing.T) {
	fb := newFakeBackend(t)
	ctx := context.Background()
	apiBody := func(status int, msg string) string { return mustJSON(t, apierror.New(status, msg)) }
	tests := []struct {
		name    string
		server  string // default: the fake backend
		status  int
		body    string
		call    func(c *apiclient.Client) error
		want    string           // the error's text
		apiErr  *apiclient.Error // nil: not an *Error
		already bool             // errors.Is ErrAlreadyKept
	}{
		{name: "404 with the API's message", status: 404, body: apiBody(404, "no finished run nope in history"),
			call: func(c *apiclient.Client) error { _, err := c.HistoryEntry(ctx, "nope"); return err },
			want: "GET /history/nope: no finished run nope in history (404)",
			apiErr: &apiclient.Error{Method: "GET", Path: "/history/nope", Status: 404,
				Message: "no finished run nope in history", Type: apierror.TypeInvalidRequest}},
		{name: "409 on import", status: 409, body: apiBody(409, "run 20261203T100000Z-x is in history already"),
			call: func(c *apiclient.Client) error { _, err := c.Import(ctx, []byte(`{}`), "/r"); return err },
			want: "run already in history: POST /history: run 20261203T100000Z-x is in history already (409)",
			apiErr: &apiclient.Error{Method: "POST", Path: "/history", Status: 409,
				Message: "run 20261203T100000Z-x is in history already", Type: apierror.TypeInvalidRequest},
			already: true},
		{name: "409 elsewhere is not ErrAlreadyKept", status: 409, body: apiBody(409, "run is still going"),
			call: func(c *apiclient.Client) error { return c.Forget(ctx, "r") },
			want: "DELETE /history/r: run is still going (409)",
			apiErr: &apiclient.Error{Method: "DELETE", Path: "/history/r", Status: 409,
				Message: "run is still going", Type: apierror.TypeInvalidRequest}},
		{name: "502 not JSON: the status line", status: 502, body: "<html>Bad Gateway</html>",
			call:   func(c *apiclient.Client) error { _, err := c.Snapshot(ctx); return err },
			want:   "GET /snapshot: 502 Bad Gateway",
			apiErr: &apiclient.Error{Method: "GET", Path: "/snapshot", Status: 502, Message: "502 Bad Gateway"}},
		{name: "400 from events", status: 400, body: `{"error":{"message":"no event accepted: 2 rejected","type":"invalid_request_error"},"accepted":0,"rejected":2,"errors":[]}`,
			call: func(c *apiclient.Client) error { _, err := c.PostEvents(ctx, []byte("{}\n")); return err },
			want: "POST /events: no event accepted: 2 rejected (400)",
			apiErr: &apiclient.Error{Method: "POST", Path: "/events", Status: 400,
				Message: "no event accepted: 2 rejected", Type: apierror.TypeInvalidRequest}},
		{name: "2xx not JSON", status: 200, body: "not json",
			call: func(c *apiclient.Client) error { _, err := c.History(ctx, 1); return err },
			want: "GET /history?limit=1: unreadable answer: "},
		{name: "unreachable server", server: unreachable(t),
			call: func(c *apiclient.Client) error { _, err := c.Snapshot(ctx); return err },
			want: "is the backend running? "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server := tt.server
			if server == "" {
				server = fb.URL
				fb.answer(tt.status, tt.body)
			}
			c, err := apiclient.New(server, apiclient.Options{})
			if err != nil {
				t.Fatal(err)
			}
			err = tt.call(c)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			ae, ok := errors.AsType[*apiclient.Error](err)
			switch {
			case tt.apiErr == nil && ok:
				t.Errorf("an *Error %+v, want none", ae)
			case tt.apiErr != nil && (!ok || *ae != *tt.apiErr):
				t.Errorf("*Error %+v, want %+v", ae, tt.apiErr)
			}
			if errors.Is(err, apiclient.ErrAlreadyKept) != tt.already {
				t.Errorf("errors.Is(err, ErrAlreadyKept) = %v, want %v", !tt.already, tt.already)
			}
		})
	}
}

// A GET carries no token; an answer over the bound (MaxAnswerBytes, less
// here) is refused, not cut short.
func TestNoTokenOnGetAndBoundedAnswer(t *testing.T) {
	auth := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth <- r.Header.Get("Authorization")
		io.WriteString(w, `"`)
		io.CopyN(w, zeros{}, 1<<20)
		io.WriteString(w, `"`)
	}))
	defer srv.Close()
	c, err := apiclient.New(srv.URL, apiclient.Options{Token: "tok", HTTPClient: &http.Client{Timeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	apiclient.SetMaxAnswer(c, 1<<20)
	_, err = c.SnapshotJSON(context.Background())
	if err == nil || !strings.Contains(err.Error(), "GET /snapshot: answer over 1 MiB") {
		t.Errorf("err = %v, want the bound", err)
	}
	if a := <-auth; a != "" {
		t.Errorf("GET sent Authorization %q", a)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '0'
	}
	return len(p), nil
}

func TestNewRefusesNonHTTP(t *testing.T) {
	for _, s := range []string{"localhost:7878", "ftp://127.0.0.1", "http://", "://x", ""} {
		if _, err := apiclient.New(s, apiclient.Options{}); err == nil || !strings.Contains(err.Error(), "want an http(s) URL") {
			t.Errorf("New(%q) err = %v", s, err)
		}
	}
}
