package server

import (
	"errors"
	"io"
	"net/http"
	"testing"
)

// A request framed two ways is refused from its header, its body not
// waited for, and the connection closes after the answer: the request
// pipelined behind it, or hidden in its body, is never read.
func TestFraming(t *testing.T) {
	const next = "GET /api/metrics/next HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
	tests := []struct {
		name, request string
		status        int
		closes        bool
	}{
		{"chunked", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 404, false},
		{"a length", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}", 404, false},
		{"length and chunked", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, true},
		{"chunked and length", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\ncontent-length: 5\r\n\r\n0\r\n\r\n", 400, true},
		{"an unknown coding", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", 501, true},
		{"gzip, chunked", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501, true},
		{"two codings", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501, true},
		// Refused from the header, no body waited for: what the header
		// says is more than is sent.
		{"two lengths, the first's body sent", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nContent-Length: 100\r\n\r\n{}", 400, true},
		{"two lengths, the last 1, no body", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nContent-Length: 1\r\n\r\n", 400, true},
		{"two equal lengths, no body", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n", 400, true},
		{"a length and identity, no body", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nTransfer-Encoding: identity\r\n\r\n", 400, true},
		{"identity alone, no body", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: identity\r\n\r\n", 501, true},
		{"chunked and length, the chunk unfinished", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n64\r\n{}", 400, true},
		{"two hosts", "GET /api/metrics/x HTTP/1.1\r\nHost: evil.example\r\nHost: 127.0.0.1\r\n\r\n", 400, true},
		// A last length of 0: the bytes a proxy reading the first takes
		// for the body must not run as the next request.
		{"a length, then 0, then a request as its body", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 52\r\nContent-Length: 0\r\n\r\nGET /api/metrics/smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 400, true},
		{"two lengths on a GET", "GET /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 52\r\nContent-Length: 0\r\n\r\n", 400, true},
		{"HTTP/1.1 without a host", "GET /api/metrics/x HTTP/1.1\r\n\r\n", 400, true},
		{"HTTP/1.0 without a host", "GET /api/metrics/x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 404, false},
		{"HTTP/1.0, chunked", "POST /api/metrics/x HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, true},
		{"a coding folded onto the next line", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n , identity\r\n\r\n0\r\n\r\n", 400, true},
		{"a bare CR before a length", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: a\rContent-Length: 52\r\nContent-Length: 0\r\n\r\n", 400, true},
		{"a NUL in a length's name", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length\x00: 52\r\nContent-Length: 0\r\n\r\n", 400, true},
		// RFC 9112 section 5.6.3: only SP and HTAB are optional blanks
		// around a value; a reader that trims \v or \f reads chunked
		// where another reads an unknown coding.
		{"chunked after a vertical tab", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: \vchunked\r\n\r\n0\r\n\r\n", 501, true},
		{"chunked before a form feed", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\f\r\n\r\n0\r\n\r\n", 501, true},
		{"chunked between a space and a tab", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding:  chunked\t\r\n\r\n0\r\n\r\n", 404, false},
		{"a length after a vertical tab beside chunked", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \v5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, true},
		{"a length after a vertical tab", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \v2\r\n\r\n{}", 400, true},
		{"two lengths and chunked", "POST /api/metrics/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, true},
	}
	addr := serve(t, New(Options{}))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, br := send(t, addr, tt.request+next)
			_, _ = io.Copy(io.Discard, res.Body)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tt.status)
			}
			second, err := http.ReadResponse(br, nil)
			if tt.closes {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("the connection stayed open: %v %v", second, err)
				}
				return
			}
			if err != nil || second.StatusCode != 404 {
				t.Fatalf("the pipelined request: %v %v, want its 404", second, err)
			}
		})
	}
}
