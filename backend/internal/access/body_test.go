package access

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"

	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
)

func compress(t testing.TB, enc string, plain []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	var w io.WriteCloser
	switch enc {
	case "gzip":
		w, _ = gzip.NewWriterLevel(&b, gzip.BestSpeed)
	case "deflate":
		w, _ = zlib.NewWriterLevel(&b, zlib.BestSpeed)
	case "raw-deflate":
		w, _ = flate.NewWriter(&b, flate.BestSpeed)
	case "br":
		w = brotli.NewWriterLevel(&b, brotli.BestSpeed)
	default:
		t.Fatalf("no encoder %s", enc)
	}
	if _, err := w.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// An encoded body is inflated within the limit, while streaming: a small
// bomb is refused with 413, never inflated whole.
func TestEncodedBodies(t *testing.T) {
	const limit = 256 << 10
	small := []byte(`{"profile":"smoke"}`)
	bomb := make([]byte, 16<<20) // zeros: a few KiB compressed
	tests := []struct {
		name     string
		encoding string // Content-Encoding sent
		body     []byte // sent as is
		status   int
		want     string // the body the handler saw, when 200
	}{
		{name: "gzip", encoding: "gzip", body: compress(t, "gzip", small), status: 200, want: string(small)},
		{name: "deflate (zlib)", encoding: "deflate", body: compress(t, "deflate", small), status: 200, want: string(small)},
		{name: "deflate (raw)", encoding: "deflate", body: compress(t, "raw-deflate", small), status: 200, want: string(small)},
		{name: "br", encoding: "br", body: compress(t, "br", small), status: 200, want: string(small)},
		{name: "identity", encoding: "identity", body: small, status: 200, want: string(small)},
		{name: "exactly the limit", encoding: "gzip", body: compress(t, "gzip", bytes.Repeat([]byte(" "), limit)), status: 200},
		{name: "gzip bomb", encoding: "gzip", body: compress(t, "gzip", bomb), status: 413},
		{name: "deflate bomb", encoding: "deflate", body: compress(t, "deflate", bomb), status: 413},
		{name: "br bomb", encoding: "br", body: compress(t, "br", bomb), status: 413},
		{name: "corrupt gzip", encoding: "gzip", body: []byte("not gzip at all"), status: 400},
		{name: "truncated gzip", encoding: "gzip", body: compress(t, "gzip", small)[:10], status: 400},
		{name: "unknown encoding", encoding: "zstd", body: small, status: 415},
		{name: "two encodings", encoding: "gzip, gzip", body: compress(t, "gzip", compress(t, "gzip", small)), status: 415},
	}
	app, g := newApp(Options{Loopback: true, MaxBody: limit})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("POST", "/api/metrics/bench", bytes.NewReader(tt.body))
			req.Host = self
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Content-Encoding", tt.encoding)
			resp, err := app.Test(req, -1)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d (%.200s)", resp.StatusCode, tt.status, got)
			}
			if tt.want != "" && string(got) != tt.want {
				t.Fatalf("handler saw %q, want %q", got, tt.want)
			}
		})
	}
	if got := g.Stats().TooLarge; got != 3 {
		t.Errorf("tooLarge counted %d, want 3", got)
	}
}

// A bomb inflating to 64 times the limit costs memory of the order of the
// limit, not of what it would inflate to.
func TestBombMemoryBounded(t *testing.T) {
	const limit = 256 << 10
	const inflated = 128 << 20
	body := compress(t, "gzip", make([]byte, inflated))
	app, _ := newApp(Options{Loopback: true, MaxBody: limit})
	post := func() int {
		req := httptest.NewRequest("POST", "/api/metrics/events", bytes.NewReader(body))
		req.Host = self
		req.Header.Set("Content-Type", "application/x-ndjson")
		req.Header.Set("Content-Encoding", "gzip")
		resp, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	post() // warm the pools
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	status := post()
	runtime.ReadMemStats(&after)
	if status != 413 {
		t.Fatalf("status %d, want 413", status)
	}
	// The decoded bytes may reach the limit (and a buffer's doubling);
	// the test's own copies of the compressed body are small.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16*limit {
		t.Fatalf("allocated %d MiB for one bomb, want under %d MiB (it inflates to %d MiB)", grew>>20, (16*limit)>>20, inflated>>20)
	}
}

// A body over the limit on the wire is refused before any route runs, and
// counted.
func TestWireLimitCounted(t *testing.T) {
	g := New(Options{Loopback: true})
	app := server.New(server.Options{BodyLimit: 1 << 10, OnError: g.Refused}, g, routes{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	defer func() { _ = server.Shutdown(app) }()
	resp, err := http.Post("http://"+ln.Addr().String()+"/api/metrics/events", "application/x-ndjson", strings.NewReader(strings.Repeat("x", 2<<10)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("status %d, want 413", resp.StatusCode)
	}
	if got := g.Stats().TooLarge; got != 1 {
		t.Fatalf("tooLarge %d, want 1", got)
	}
}
