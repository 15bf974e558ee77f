package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestCaddyRelaysStreams runs Caddy (when scripts/setup --caddy put it on
// PATH) from the generated Caddyfile in front of an upstream that answers
// POSTs with an event stream, and sends streamed requests through it one
// after another on one kept-alive connection: each must arrive whole.
func TestCaddyRelaysStreams(t *testing.T) {
	if _, err := caddyBin(); err != nil {
		t.Skip(err)
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 20 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(time.Millisecond)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer upstream.Close()
	var want strings.Builder
	for i := range 20 {
		fmt.Fprintf(&want, "data: %d\n\n", i)
	}
	want.WriteString("data: [DONE]\n\n")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := startCaddy(ctx, t.TempDir(), upstream.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	for i := range 30 {
		resp, err := client.Post("http://"+p.addr+"/v1/completions", "application/json", strings.NewReader(`{"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(got) != want.String() {
			t.Fatalf("request %d: %q (%v), want %q\ncaddy's log:\n%s", i, got, err, want.String(), p.tail())
		}
	}
}
