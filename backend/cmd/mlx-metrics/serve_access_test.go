package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/access"
)

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// serve wires the guard before every feature: with --token, the changes
// need it, the reads do not, a rebound Host is refused, /healthz counts the
// refusals, and the reference engine still publishes (with the token).
func TestServeAccess(t *testing.T) {
	addr := freeAddr(t)
	t.Setenv("MLX_METRICS_TOKEN", "s3cret") // the env twin of --token
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--addr", addr, "--home", t.TempDir(), "--reference-engine", "--reference-traffic", "20"})
	}()
	base := "http://" + addr
	client := &http.Client{Timeout: 5 * time.Second}
	send := func(method, path, body string, header map[string]string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	for i := 0; ; i++ {
		if code, _ := send("GET", "/healthz", "", nil); code == 200 {
			break
		}
		if i == 400 {
			t.Fatal("the backend never answered /healthz")
		}
		time.Sleep(25 * time.Millisecond) // polls for the listener; not the synchronisation under test
	}

	withToken := map[string]string{"Authorization": "Bearer s3cret", "Content-Type": "application/json"}
	tests := []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int // 0: any but a refusal by the guard
	}{
		{"POST /bench needs the token", "POST", "/api/metrics/bench", `{"profile":"no-such"}`, map[string]string{"Content-Type": "application/json"}, 401},
		{"DELETE /bench/:id needs the token", "DELETE", "/api/metrics/bench/j1", "", nil, 401},
		{"POST /history (import) needs the token", "POST", "/api/metrics/history", `{"id":"x"}`, map[string]string{"Content-Type": "application/json"}, 401},
		{"DELETE /history/:id needs the token", "DELETE", "/api/metrics/history/x", "", nil, 401},
		{"POST /events needs the token", "POST", "/api/metrics/events", "{}", map[string]string{"Content-Type": "application/x-ndjson"}, 401},
		{"text/plain refused", "POST", "/api/metrics/bench", `{"profile":"no-such"}`, map[string]string{"Authorization": "Bearer s3cret", "Content-Type": "text/plain"}, 415},
		{"foreign page refused", "POST", "/api/metrics/bench", `{"profile":"no-such"}`, map[string]string{"Authorization": "Bearer s3cret", "Content-Type": "application/json", "Origin": "http://evil.test"}, 403},
		{"rebound Host refused", "GET", "/api/metrics/snapshot", "", map[string]string{"Host": "evil.test:7878"}, 403},
		{"wrong method", "PUT", "/api/metrics/snapshot", "{}", withToken, 405},
		{"with the token, the route answers", "POST", "/api/metrics/bench", `{"profile":"no-such"}`, withToken, 0},
		{"reads stay open", "GET", "/api/metrics/snapshot", "", nil, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := send(tt.method, tt.path, tt.body, tt.header)
			switch {
			case tt.status == 0 && (code == 0 || code == 401 || code == 403 || code == 415):
				t.Fatalf("status %d: refused by the guard (%s)", code, body)
			case tt.status != 0 && code != tt.status:
				t.Fatalf("status %d, want %d (%s)", code, tt.status, body)
			}
			if code == 200 {
				return
			}
			if !bytes.Contains(body, []byte(`"error"`)) {
				t.Fatalf("body %q is not the API's error JSON", body)
			}
		})
	}

	// The reference engine posts with the token: its events arrive.
	var health struct {
		Refused access.Stats `json:"refused"`
		Ingest  struct {
			HTTP struct {
				Accepted uint64 `json:"accepted"`
			} `json:"http"`
		} `json:"ingest"`
	}
	for i := 0; ; i++ {
		_, b := send("GET", "/healthz", "", nil)
		if err := json.Unmarshal(b, &health); err != nil {
			t.Fatalf("/healthz: %v: %s", err, b)
		}
		if health.Ingest.HTTP.Accepted > 0 {
			break
		}
		if i == 600 {
			t.Fatalf("the reference engine's events never arrived: %s", b)
		}
		time.Sleep(25 * time.Millisecond) // polls for the engine's first batch
	}
	want := access.Stats{Unauthorized: 5, Forbidden: 2, Unsupported: 1, MethodNotAllowed: 1}
	if health.Refused != want {
		t.Errorf("/healthz refused %+v, want %+v", health.Refused, want)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop within 30s of the signal")
	}
}
