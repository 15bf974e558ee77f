package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/common/expfmt"

	"github.com/mlx-bun/mlx-metrics/backend/internal/prom"
	"github.com/mlx-bun/mlx-metrics/backend/internal/store"
	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// A request counts under its model only when the upstream accepted it; a
// refused one (404 for an unknown model name, any 4xx or 5xx) or one never
// answered is an error under no model, which makes no model row in the
// live store and no series in the exporter for the name the client sent.
func TestAttributionOnlyWhenAccepted(t *testing.T) {
	const okBody = `{"id":"c1","model":"qwen","choices":[{"index":0,"message":{"content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`
	tests := []struct {
		name      string
		status    int // 0: the upstream is down
		body      string
		model     string // the event's
		finish    events.FinishReason
		wantModel bool // the store has a row and the exporter a series for "qwen"
	}{
		{"accepted", 200, okBody, "qwen", events.FinishStop, true},
		{"unknown model, 404", 404, `{"object":"error","message":"The model qwen does not exist.","type":"NotFoundError","code":404}`, "", events.FinishError, false},
		{"bad request, 400", 400, `{"object":"error","message":"bad","code":400}`, "", events.FinishError, false},
		{"server error, 500", 500, `{"object":"error","message":"boom","code":500}`, "", events.FinishError, false},
		{"upstream down", 0, "", "", events.FinishError, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var upstream string
			if tc.status == 0 {
				ln, _ := net.Listen("tcp", "127.0.0.1:0")
				upstream = "http://" + ln.Addr().String()
				ln.Close()
			} else {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(tc.status)
					io.WriteString(w, tc.body)
				}))
				defer srv.Close()
				upstream = srv.URL
			}
			base, evs := start(t, upstream, nil)
			resp, err := http.Post(base+"/v1/chat/completions", "application/json",
				strings.NewReader(`{"model":"qwen","messages":[]}`))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if tc.status != 0 && resp.StatusCode != tc.status {
				t.Errorf("status %d, want the upstream's %d", resp.StatusCode, tc.status)
			}
			p := next(t, evs)
			if p.Model != tc.model || p.Finish != tc.finish {
				t.Fatalf("event model %q finish %q, want %q %q", p.Model, p.Finish, tc.model, tc.finish)
			}

			ev := events.Event{Type: events.TypeRequestFinished, At: t0.UnixMilli(), Payload: p}
			st := store.New(t0.UnixMilli(), store.Options{})
			st.Apply(ev)
			snap := st.Snapshot(t0.UnixMilli())
			if snap.Requests.Finished != 1 {
				t.Errorf("store counted %d requests, want 1", snap.Requests.Finished)
			}
			if got := len(snap.Models) == 1 && snap.Models[0].Model == "qwen"; got != tc.wantModel || len(snap.Models) > 1 {
				t.Errorf("store models %+v, want a qwen row: %v", snap.Models, tc.wantModel)
			}

			exp := prom.New(prom.Options{})
			exp.Observe(ev)
			text := exposition(t, exp)
			if got := strings.Contains(text, `model_name="qwen"`); got != tc.wantModel {
				t.Errorf("exporter has a qwen series: %v, want %v\n%s", got, tc.wantModel, text)
			}
			if !tc.wantModel && !strings.Contains(text, `mlx_request_errors_total{model_name=""} 1`) {
				t.Errorf("the refused request is not counted as an error under no model:\n%s", text)
			}
		})
	}
}

// The proxy cleans the path's dot segments, encoded ones too, and refuses
// with a 400 JSON error whatever leaves /v1; the upstream never sees it.
func TestPathStaysUnderV1(t *testing.T) {
	tests := []struct {
		path    string
		status  int
		forward string // the path the upstream gets, when forwarded
	}{
		{"/v1/models", 200, "/v1/models"},
		{"/v1/models/", 200, "/v1/models/"},
		{"/v1/./models", 200, "/v1/models"},
		{"/v1/files/../models", 200, "/v1/models"},
		{"/v1/files/%2e%2e/models", 200, "/v1/models"},
		{"/v1/models/org%2Fname", 200, "/v1/models/org%2Fname"},
		{"/v1/models/..", 200, "/v1/"},
		{"/v1/../admin", 400, ""},
		{"/v1/..", 400, ""},
		{"/v1/%2e%2e/admin", 400, ""},
		{"/v1/%2E%2E/admin", 400, ""},
		{"/v1/.%2e/admin", 400, ""},
		{"/v1/models/../../admin", 400, ""},
		{"/v1/%2e%2e%2fadmin", 400, ""},
		{"/v1/..%5cadmin", 400, ""},
		{"/v1/a%zz", 400, ""},
		{"/v1/a%00b", 400, ""},
	}
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.URL.EscapedPath())
		w.WriteHeader(200)
	}))
	defer srv.Close()
	base, _ := start(t, srv.URL, nil)
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			got.Store("")
			// A raw request line: an HTTP client would clean or re-encode
			// the path itself.
			conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			io.WriteString(conn, "GET "+tc.path+" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if tc.status == 400 {
				var e struct {
					Error struct{ Message, Type string }
				}
				if json.Unmarshal(body, &e) != nil || e.Error.Message == "" || strings.Contains(e.Error.Message, "admin") {
					t.Errorf("want a JSON error that does not echo the path, got %s", body)
				}
				if f := got.Load().(string); f != "" {
					t.Errorf("the upstream got %q", f)
				}
				return
			}
			if f := got.Load().(string); f != tc.forward {
				t.Errorf("the upstream got %q, want %q", f, tc.forward)
			}
		})
	}
}

// exposition is the exporter's scrape in the text format.
func exposition(t *testing.T, e *prom.Exporter) string {
	t.Helper()
	fams, err := e.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range fams {
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}
