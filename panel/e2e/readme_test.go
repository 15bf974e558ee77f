package e2e

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readmeSnippets are the README's html blocks, in order: the same-origin
// form, then the other-origin one.
func readmeSnippets(t *testing.T) []string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var cur []string
	in := false
	for _, line := range strings.Split(string(text), "\n") {
		switch {
		case !in && line == "```html":
			in, cur = true, nil
		case in && strings.HasPrefix(line, "```"):
			in = false
			out = append(out, strings.Join(cur, "\n"))
		case in:
			cur = append(cur, line)
		}
	}
	if len(out) != 2 {
		t.Fatalf("the README has %d html snippets, want 2 (same origin, another origin): update this test", len(out))
	}
	return out
}

// TestReadmeSnippets runs the README's two embedding snippets as written,
// each in a host page: the same-origin one on a host that proxies the
// backend's /api/metrics (as the README says a host does), the other-origin
// one on a host of its own port, with the backend's address for
// 127.0.0.1:7878. Each panel goes live with the backend's figures.
func TestReadmeSnippets(t *testing.T) {
	needBrowser(t)
	snippets := readmeSnippets(t)
	hostL := listen(t) // the other origin's host: the backend's CORS names it
	hostAddr := hostL.Addr().String()
	b := startBackend(t, "--cors-origins", "http://"+hostAddr)
	seed(b, "readme-model", 7)
	backendURL, _ := url.Parse(b.URL())
	proxy := httputil.NewSingleHostReverseProxy(backendURL)
	for i, tc := range []struct {
		name  string
		proxy bool // the host proxies /api/metrics to the backend
	}{
		{"same origin", true},
		{"another origin", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := hostL
			if tc.proxy {
				l = listen(t)
			}
			body := strings.ReplaceAll(snippets[i], "http://127.0.0.1:7878", b.URL())
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.proxy && strings.HasPrefix(r.URL.Path, "/api/metrics") {
					r.Host = backendURL.Host // the backend answers its own loopback Host only
					proxy.ServeHTTP(w, r)
					return
				}
				if r.URL.Path != "/" {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				fmt.Fprintf(w, "<!doctype html><html><head><meta charset=\"utf-8\"><title>host</title></head><body>\n%s\n</body></html>", body)
			})}
			go srv.Serve(l)
			t.Cleanup(func() { srv.Close() })

			ctx := browser(t)
			navigate(t, ctx, "http://"+l.Addr().String()+"/")
			waitFrame(t, ctx, "the snippet's panel is live", `document.querySelector("#conn").dataset.state === "live"`, 30*time.Second)
			waitFrame(t, ctx, "its figures are the backend's", tileValue("queued")+` === "7"`, 5*time.Second)
		})
	}
}
