package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestFloorRelays sends keep-alive requests through each floor relay: an
// event stream flushed event by event and an answer larger than the
// sockets' buffers, which must arrive whole and in order.
func TestFloorRelays(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/events":
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 50 {
				fmt.Fprintf(w, "data: %d\n\n", i)
				w.(http.Flusher).Flush()
			}
		case "/big":
			_, _ = w.Write(big)
		case "/echo":
			// Read whole first: a server that answers before the body is
			// read closes the connection after it.
			b, _ := io.ReadAll(r.Body)
			_, _ = w.Write(b)
		}
	}))
	defer upstream.Close()
	var wantEvents bytes.Buffer
	for i := range 50 {
		fmt.Fprintf(&wantEvents, "data: %d\n\n", i)
	}
	upAddr := upstream.Listener.Addr().String()
	for _, mode := range floorModes {
		t.Run(mode, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() { _ = serveFloor(ln, mode, upAddr) }()

			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			br := bufio.NewReader(conn)
			for _, tc := range []struct {
				method, path string
				body         []byte
				want         []byte
			}{
				{"GET", "/events", nil, wantEvents.Bytes()},
				{"GET", "/big", nil, big},
				{"POST", "/echo", big[:3<<20], big[:3<<20]},
				{"GET", "/events", nil, wantEvents.Bytes()},
			} {
				req, _ := http.NewRequest(tc.method, "http://"+upAddr+tc.path, bytes.NewReader(tc.body))
				if err := req.Write(conn); err != nil {
					t.Fatal(err)
				}
				resp, err := http.ReadResponse(br, req)
				if err != nil {
					t.Fatalf("%s %s (%d bytes sent): %v", tc.method, tc.path, len(tc.body), err)
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || sha256.Sum256(got) != sha256.Sum256(tc.want) {
					t.Fatalf("%s %s: %d bytes (%v), want the %d sent", tc.method, tc.path, len(got), err, len(tc.want))
				}
			}
		})
	}
}

func TestServeFloorUnknownMode(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := serveFloor(ln, "splice", "127.0.0.1:1"); err == nil {
		t.Fatal("an unknown mode served")
	}
}
