package e2e

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
)

// startFailingAPIProxy fronts b, answering 503 for the bench and history
// routes and passing everything else through: a host whose bench half is
// down.
func startFailingAPIProxy(t *testing.T, b *backend) string {
	t.Helper()
	target, _ := url.Parse(b.URL())
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1 // stream SSE as it comes
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/metrics/bench") || strings.HasPrefix(r.URL.Path, "/api/metrics/history") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":{"message":"bench service unavailable","type":"server_error"}}`))
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
