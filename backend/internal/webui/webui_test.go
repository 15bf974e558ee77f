package webui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
)

// routes are the panel's rows of the route table (app.Routes).
func routes(u *UI) []server.Route {
	return []server.Route{
		{Method: fiber.MethodGet, Path: "/", Handler: u.Page},
		{Method: fiber.MethodGet, Path: "/metrics", Handler: u.PageForBrowsers},
		{Method: fiber.MethodGet, Path: "/metrics/", Handler: u.MetricsSlash},
		{Method: fiber.MethodGet, Path: LoaderPath, Handler: u.Loader},
		{Method: fiber.MethodGet, Path: server.APIPrefix + "/panel", Handler: u.Frame},
		{Method: fiber.MethodGet, Path: FramePath + "*", Handler: u.Frame},
	}
}

func gz(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

var built = fstest.MapFS{
	"index.html":                  {Data: []byte("<!doctype html>standalone")},
	"panel.js":                    {Data: []byte("export class MlxMetricsPanel {}")},
	"frame/index.html":            {Data: []byte("<!doctype html>frame")},
	"frame/web/app.wasm.gz":       {Data: gz("\x00asm wasm bytes")},
	"frame/web/panel.css":         {Data: []byte(":root{}")},
	"frame/app.js":                {Data: []byte("var goapp;")},
	"frame/web/echarts.min.js.gz": {Data: gz("echarts")},
}

// withBrotli is the build with a brotli copy of the wasm beside its gzip.
var withBrotli = func() fstest.MapFS {
	m := fstest.MapFS{}
	for k, v := range built {
		m[k] = v
	}
	m["frame/web/app.wasm.br"] = &fstest.MapFile{Data: []byte("brotli bytes")}
	return m
}()

// What Chromium sends for a page, and Prometheus 2.x for a scrape.
var (
	browserAccept = map[string]string{"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"}
	promAccept    = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)

func TestWantsHTML(t *testing.T) {
	tests := []struct {
		accept string
		want   bool
	}{
		{browserAccept["Accept"], true},
		{"text/html", true},
		{"application/xhtml+xml", true},
		{"TEXT/HTML; charset=utf-8", true},
		{"text/plain, text/html;q=0.5", true},
		{promAccept, false},
		{"text/plain;version=0.0.4", false},
		{"*/*", false},
		{"", false},
		{"text/html;q=0", false},
		{"text/html;q=0.000", false},
		{"application/xhtml+xml;q=0, text/html", true},
		{"text/html;level=1;q=0", false},
		{"text/htmlx", false},
	}
	for _, tt := range tests {
		if got := WantsHTML(tt.accept); got != tt.want {
			t.Errorf("WantsHTML(%q) = %v, want %v", tt.accept, got, tt.want)
		}
	}
}

func TestRoutes(t *testing.T) {
	tests := []struct {
		name       string
		assets     fstest.MapFS
		origins    []string
		method     string
		path       string
		header     map[string]string
		wantStatus int
		wantBody   string
		wantHeader map[string]string
		cspHas     []string // parts of the Content-Security-Policy
	}{
		{name: "standalone", assets: built, path: "/", wantStatus: 200, wantBody: "standalone",
			wantHeader: map[string]string{"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-cache"}},
		{name: "standalone at /metrics for a browser", assets: built, path: "/metrics", header: browserAccept, wantStatus: 200, wantBody: "standalone",
			wantHeader: map[string]string{"Vary": "Accept-Encoding, Accept"}},
		// A scraper is passed on to the exposition (here, with no route
		// after the page, a 404).
		{name: "/metrics for a scraper passes on", assets: built, path: "/metrics", header: map[string]string{"Accept": promAccept}, wantStatus: 404},
		{name: "/metrics for curl passes on", assets: built, path: "/metrics", header: map[string]string{"Accept": "*/*"}, wantStatus: 404},
		{name: "not built", assets: fstest.MapFS{"README.txt": {}}, path: "/", wantStatus: 503, wantBody: "panel not built: run scripts/build-panel"},
		{name: "not built frame", assets: fstest.MapFS{"README.txt": {}}, path: "/api/metrics/panel/", wantStatus: 503, wantBody: `"type":"server_error"`},
		{name: "loader", assets: built, path: "/api/metrics/panel.js", wantStatus: 200, wantBody: "MlxMetricsPanel",
			wantHeader: map[string]string{"Content-Type": "text/javascript; charset=utf-8"}},
		{name: "frame index", assets: built, path: "/api/metrics/panel/", wantStatus: 200, wantBody: "frame",
			cspHas: []string{"frame-ancestors 'self'"}},
		{name: "frame redirect", assets: built, path: "/api/metrics/panel", wantStatus: 301,
			wantHeader: map[string]string{"Location": "/api/metrics/panel/"}},
		{name: "wasm gzip", assets: built, path: "/api/metrics/panel/web/app.wasm", header: map[string]string{"Accept-Encoding": "gzip, br"},
			wantStatus: 200, wantBody: string(gz("\x00asm wasm bytes")),
			wantHeader: map[string]string{"Content-Encoding": "gzip", "Content-Type": "application/wasm", "Vary": "Accept-Encoding"}},
		{name: "wasm inflated for identity", assets: built, path: "/api/metrics/panel/web/app.wasm", header: map[string]string{"Accept-Encoding": "identity"},
			wantStatus: 200, wantBody: "\x00asm wasm bytes", wantHeader: map[string]string{"Content-Encoding": ""}},
		{name: "wasm inflated when gzip is refused", assets: built, path: "/api/metrics/panel/web/app.wasm", header: map[string]string{"Accept-Encoding": "gzip;q=0, identity"},
			wantStatus: 200, wantBody: "\x00asm wasm bytes", wantHeader: map[string]string{"Content-Encoding": ""}},
		{name: "wasm inflated without Accept-Encoding", assets: built, path: "/api/metrics/panel/web/app.wasm",
			wantStatus: 200, wantBody: "\x00asm wasm bytes", wantHeader: map[string]string{"Content-Encoding": ""}},
		{name: "wasm gzip for any encoding", assets: built, path: "/api/metrics/panel/web/app.wasm", header: map[string]string{"Accept-Encoding": "*"},
			wantStatus: 200, wantHeader: map[string]string{"Content-Encoding": "gzip"}},
		{name: "wasm brotli when taken", assets: withBrotli, path: "/api/metrics/panel/web/app.wasm", header: map[string]string{"Accept-Encoding": "gzip, deflate, br"},
			wantStatus: 200, wantBody: "brotli bytes", wantHeader: map[string]string{"Content-Encoding": "br", "Vary": "Accept-Encoding"}},
		{name: "wasm gzip when br is refused", assets: withBrotli, path: "/api/metrics/panel/web/app.wasm", header: map[string]string{"Accept-Encoding": "gzip, br;q=0"},
			wantStatus: 200, wantBody: string(gz("\x00asm wasm bytes")), wantHeader: map[string]string{"Content-Encoding": "gzip"}},
		{name: "wasm gzip when preferred", assets: withBrotli, path: "/api/metrics/panel/web/app.wasm", header: map[string]string{"Accept-Encoding": "gzip;q=1, br;q=0.5"},
			wantStatus: 200, wantHeader: map[string]string{"Content-Encoding": "gzip"}},
		{name: "wasm inflated for identity beside brotli", assets: withBrotli, path: "/api/metrics/panel/web/app.wasm", header: map[string]string{"Accept-Encoding": "identity"},
			wantStatus: 200, wantBody: "\x00asm wasm bytes", wantHeader: map[string]string{"Content-Encoding": ""}},
		{name: "missing asset", assets: built, path: "/api/metrics/panel/web/nope.js", wantStatus: 404, wantBody: `"type":"invalid_request_error"`},
		{name: "traversal stays inside", assets: built, path: "/api/metrics/panel/../../panel.js", wantStatus: 404, wantBody: "no panel asset frame/panel.js"},
		{name: "frame-ancestors lists origins", assets: built, origins: []string{"http://host.test:3000"}, path: "/api/metrics/panel/",
			wantStatus: 200, cspHas: []string{"frame-ancestors 'self' http://host.test:3000", "connect-src 'self' http: https:;"}},
		{name: "frame runs wasm, scripts from here only", assets: built, path: "/api/metrics/panel/", wantStatus: 200,
			cspHas: []string{"script-src 'self' 'wasm-unsafe-eval';", "worker-src 'self'", "object-src 'none'", "frame-ancestors 'self'"}},
		{name: "standalone allows its inline script by hash", assets: withInline, path: "/", wantStatus: 200,
			cspHas: []string{"script-src 'self' 'sha256-" + sha256b64("\n  import \"./api/metrics/panel.js\";\n") + "';", "frame-src 'self'", "object-src 'none'", "frame-ancestors 'self'"}},
		{name: "standalone policy at /metrics", assets: built, path: "/metrics", header: browserAccept, wantStatus: 200,
			cspHas: []string{"default-src 'self'; script-src 'self';"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := New(Options{Assets: tt.assets, CORSOrigins: tt.origins})
			if err != nil {
				t.Fatal(err)
			}
			app := server.New(server.Options{}, routes(u)...)
			method := tt.method
			if method == "" {
				method = http.MethodGet
			}
			req := httptest.NewRequest(method, tt.path, nil)
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			res, err := app.Test(req, -1)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d (body %q)", res.StatusCode, tt.wantStatus, body)
			}
			if !strings.Contains(string(body), tt.wantBody) {
				t.Errorf("body %q, want it to contain %q", body, tt.wantBody)
			}
			for k, v := range tt.wantHeader {
				if got := res.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			for _, part := range tt.cspHas {
				if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, part) {
					t.Errorf("CSP %q lacks %q", csp, part)
				}
			}
		})
	}
}

// withInline is a build whose standalone page has an inline script and a
// script by src, the latter hashed by no one.
var withInline = fstest.MapFS{
	"index.html": {Data: []byte("<!doctype html><script type=\"module\">\n  import \"./api/metrics/panel.js\";\n</script><script src=\"./x.js\"></script>")},
	"panel.js":   {Data: []byte("export class MlxMetricsPanel {}")},
}

func sha256b64(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base64.StdEncoding.EncodeToString(sum[:])
}

func TestETagRevalidation(t *testing.T) {
	u, _ := New(Options{Assets: built})
	app := server.New(server.Options{}, routes(u)...)
	res, _ := app.Test(httptest.NewRequest("GET", "/api/metrics/panel.js", nil), -1)
	etag := res.Header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	req := httptest.NewRequest("GET", "/api/metrics/panel.js", nil)
	req.Header.Set("If-None-Match", etag)
	res, _ = app.Test(req, -1)
	if res.StatusCode != http.StatusNotModified {
		t.Fatalf("status %d, want 304", res.StatusCode)
	}
}

func TestEmbeddedPlaceholderBuilds(t *testing.T) {
	u, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Either the placeholder alone (not built) or a full build: both serve.
	app := server.New(server.Options{}, routes(u)...)
	res, _ := app.Test(httptest.NewRequest("GET", "/", nil), -1)
	want := http.StatusServiceUnavailable
	if u.Built() {
		want = http.StatusOK
	}
	if res.StatusCode != want {
		t.Fatalf("status %d, want %d", res.StatusCode, want)
	}
}

// countingFS counts opens per name.
type countingFS struct {
	fs.FS
	mu    sync.Mutex
	opens map[string]int
}

func (c *countingFS) Open(name string) (fs.File, error) {
	c.mu.Lock()
	c.opens[name]++
	c.mu.Unlock()
	return c.FS.Open(name)
}

// TestAssetsReadOnce: an asset is read from the build once; later answers,
// revalidations included, come from memory.
func TestAssetsReadOnce(t *testing.T) {
	assets := &countingFS{FS: built, opens: map[string]int{}}
	u, _ := New(Options{Assets: assets})
	app := server.New(server.Options{}, routes(u)...)
	var etag string
	for i := 0; i < 3; i++ {
		req := httptest.NewRequest("GET", "/api/metrics/panel/web/app.wasm", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		req.Header.Set("If-None-Match", etag)
		res, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 200, false: 304}[i == 0]; res.StatusCode != want {
			t.Fatalf("request %d: status %d, want %d", i, res.StatusCode, want)
		}
		etag = res.Header.Get("ETag")
	}
	if n := assets.opens["frame/web/app.wasm.gz"]; n != 1 {
		t.Errorf("app.wasm.gz opened %d times, want 1", n)
	}
}
