package access

import (
	"bytes"
	"net/http/httptest"
	"testing"
)

// Whatever a client sends as an encoded change, the guard answers it with
// the body inflated within the bound or a 4xx, never a 5xx.
func FuzzEncodedBody(f *testing.F) {
	small := []byte(`{"profile":"smoke"}`)
	for _, enc := range []string{"gzip", "deflate", "raw-deflate", "br"} {
		f.Add(enc, compress(f, enc, small))
		f.Add(enc, compress(f, enc, make([]byte, 8<<10)))
	}
	f.Add("gzip", []byte("\x1f\x8b\x08\x00\x00\x00\x00\x00"))
	f.Add("br", []byte{0xff, 0xff})
	f.Add("identity", small)
	f.Add("zstd", small)
	const limit = 4 << 10
	app, _ := newApp(Options{Loopback: true, MaxBody: limit})
	f.Fuzz(func(t *testing.T, enc string, body []byte) {
		if enc == "raw-deflate" {
			enc = "deflate"
		}
		req := httptest.NewRequest("POST", "/api/metrics/bench", bytes.NewReader(body))
		req.Host = self
		req.Header.Set("Content-Type", "application/json")
		if enc != "" {
			req.Header["Content-Encoding"] = []string{enc}
		}
		resp, err := app.Test(req, -1)
		if err != nil {
			return // a header the client library itself refuses
		}
		defer resp.Body.Close()
		var got bytes.Buffer
		_, _ = got.ReadFrom(resp.Body)
		switch {
		case resp.StatusCode >= 500:
			t.Fatalf("status %d for %q %x", resp.StatusCode, enc, body)
		case resp.StatusCode == 200 && got.Len() > limit:
			t.Fatalf("the handler got %d bytes, over the %d limit", got.Len(), limit)
		}
	})
}
