package access

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/valyala/fasthttp"

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

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// A bomb of each encoding, inflating to 512 times the limit, is refused
// with 413: the inflate stops one byte past the limit (nothing more is
// asked of the decoder), and the request costs memory of the order of the
// limit and the decoder's window, never of what it would inflate to.
func TestBombsStopAtTheLimit(t *testing.T) {
	const limit = 256 << 10
	// 128 times the limit: a bomb, and still quick to compress with the
	// race detector on (brotli's encoder is the slow part).
	const inflated = 32 << 20
	zeros := make([]byte, inflated)
	tests := []struct {
		encoding string // sent as Content-Encoding
		format   string // compress's name for it
		window   uint64 // the decoder's own buffers, whatever the body
	}{
		{"gzip", "gzip", 64 << 10},
		{"deflate", "deflate", 64 << 10},
		{"deflate", "raw-deflate", 64 << 10},
		// A brotli decoder's ring buffer is the sender's window, at most
		// 16 MiB (RFC 7932), whatever the body inflates to.
		{"br", "br", 16 << 20},
	}
	app, g := newApp(Options{Loopback: true, MaxBody: limit})
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			body := compress(t, tt.format, zeros)
			r, err := decoder(tt.encoding, body)
			if err != nil {
				t.Fatal(err)
			}
			cr := &countingReader{r: r}
			ctx := app.AcquireCtx(&fasthttp.RequestCtx{})
			_, err = server.ReadBody(ctx, cr, limit, -1)
			app.ReleaseCtx(ctx)
			if !errors.Is(err, server.ErrOverLimit) {
				t.Fatalf("ReadBody: %v, want ErrOverLimit", err)
			}
			if cr.n != limit+1 {
				t.Fatalf("the decoder was read for %d bytes, want the limit and one (%d)", cr.n, limit+1)
			}

			post := func() int {
				req := httptest.NewRequest("POST", "/api/metrics/events", bytes.NewReader(body))
				req.Host = self
				req.Header.Set("Content-Type", "application/x-ndjson")
				req.Header.Set("Content-Encoding", tt.encoding)
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
			// The decoded bytes may reach the limit (and a buffer's
			// doubling); the test's own copies of the compressed body
			// are small.
			bound := 16*limit + tt.window
			if grew := after.TotalAlloc - before.TotalAlloc; grew > bound {
				t.Fatalf("allocated %d KiB for one bomb, want under %d KiB (it inflates to %d MiB)", grew>>10, bound>>10, inflated>>20)
			}
		})
	}
	if got := g.Stats().TooLarge; got != 2*int64(len(tests)) {
		t.Errorf("tooLarge counted %d, want %d", got, 2*len(tests))
	}
}

// A body over the limit on the wire is refused before any route runs, and
// counted.
func TestWireLimitCounted(t *testing.T) {
	g := New(Options{Loopback: true})
	app := server.New(server.Options{BodyLimit: 1 << 10, OnError: g.Refused, Guard: g}, fakeRoutes()...)
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

// At most MaxDecodes bodies inflate at once: many small bombs sent
// together cannot add up past a bound. One past them is told to come
// back; an uncompressed body is not held up.
func TestDecodesBounded(t *testing.T) {
	app, g := newApp(Options{Loopback: true, MaxDecodes: 2})
	small := []byte(`{"type":"x","at":1}` + "\n")
	post := func(enc string, body []byte) *http.Response {
		req := httptest.NewRequest("POST", "/api/metrics/events", bytes.NewReader(body))
		req.Host = self
		req.Header.Set("Content-Type", "application/x-ndjson")
		if enc != "" {
			req.Header.Set("Content-Encoding", enc)
		}
		resp, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	// Two decodes in flight: the slots are held as a decode holds them.
	g.decoding <- struct{}{}
	g.decoding <- struct{}{}
	if resp := post("gzip", compress(t, "gzip", small)); resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("a third decode: %d, Retry-After %q; want 503 with Retry-After 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp := post("", small); resp.StatusCode != 200 {
		t.Fatalf("an uncompressed body while decodes are full: %d", resp.StatusCode)
	}
	<-g.decoding
	if resp := post("br", compress(t, "br", small)); resp.StatusCode != 200 {
		t.Fatalf("a decode once a slot is free: %d", resp.StatusCode)
	}
	if len(g.decoding) != 1 {
		t.Fatalf("%d slots held after the decode, want the one the test holds", len(g.decoding))
	}
}
