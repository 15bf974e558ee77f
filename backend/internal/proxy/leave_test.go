package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// A client that leaves while a non-streamed completion is generated gets
// its upstream request cancelled once the wait is watched (watchAfter);
// one that stays gets its answer, and its connection serves the next
// request as before, also one it pipelined during the wait (peeked at,
// not read).
func TestClientLeavingNonStreamed(t *testing.T) {
	const answer = `{"id":"c1","model":"m","choices":[{"index":0,"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`
	const models = "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
	for _, client := range []string{"leaves", "leaves after an empty line", "half-closes", "stays", "pipelines", "pipelines after an empty line"} {
		t.Run(client, func(t *testing.T) {
			arrived, release, cancelled := make(chan struct{}, 1), make(chan struct{}), make(chan struct{}, 1)
			upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/completions" {
					io.WriteString(w, `{"data":[]}`)
					return
				}
				// Read whole, as an engine does: net/http notices a
				// connection closing only once the body is read.
				_, _ = io.ReadAll(r.Body)
				arrived <- struct{}{}
				select {
				case <-r.Context().Done():
					cancelled <- struct{}{}
				case <-release:
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, answer)
				case <-time.After(10 * time.Second):
				}
			}))
			defer upstream.Close()
			clk := newClock()
			base, evs := start(t, upstream.URL, clk)
			conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			body := `{"model":"m","prompt":"x"}`
			io.WriteString(conn, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
			wait(t, arrived, "the request upstream")
			switch client {
			case "pipelines":
				io.WriteString(conn, models)
			case "leaves after an empty line":
				io.WriteString(conn, "\r\n")
			case "pipelines after an empty line":
				io.WriteString(conn, "\r\n"+models)
			}
			clk.Advance(watchAfter) // the wait is watched from here on

			switch client {
			case "leaves", "leaves after an empty line":
				conn.Close()
			case "half-closes":
				// Counted as gone, as nginx counts it, and sent nothing: an
				// empty answer would read as a success.
				conn.(*net.TCPConn).CloseWrite()
			}
			if strings.HasPrefix(client, "leaves") || client == "half-closes" {
				wait(t, cancelled, "the upstream request cancelled")
				if ev := next(t, evs); ev.Finish != events.FinishCancelled {
					t.Errorf("event %+v, want cancelled", ev)
				}
				if client == "half-closes" {
					if b, err := io.ReadAll(conn); len(b) > 0 || err != nil {
						t.Errorf("the client read %q (%v), want nothing and the end", b, err)
					}
				}
				return
			}
			close(release)
			br := bufio.NewReader(conn)
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(res.Body)
			if res.StatusCode != 200 || string(got) != answer {
				t.Fatalf("answer %d %q", res.StatusCode, got)
			}
			if ev := next(t, evs); ev.Finish != events.FinishStop || ev.CompletionTokens != 1 {
				t.Errorf("event %+v, want stop with 1 completion token", ev)
			}
			if client == "stays" {
				io.WriteString(conn, models)
			}
			if res, err := http.ReadResponse(br, nil); err != nil || res.StatusCode != 200 {
				t.Fatalf("the next request on the connection: %v %v", res, err)
			}
		})
	}
}

func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no " + what)
	}
}

// serve stopping while the proxy waits for an answer's head counts the
// request as cancelled, as it does for a stream in flight, not as an error.
func TestShutdownWhileWaitingForTheHead(t *testing.T) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release: // the test failed; let Close return
		}
	}))
	defer upstream.Close()
	defer close(release)
	base, _, evs, cancel := startStopping(t, upstream.URL)
	answered := make(chan int, 1)
	go func() {
		res, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(`{"model":"m","prompt":"x"}`))
		if err != nil {
			answered <- 0
			return
		}
		res.Body.Close()
		answered <- res.StatusCode
	}()
	wait(t, arrived, "the request upstream")
	cancel() // serve's context ends
	if ev := next(t, evs); ev.Finish != events.FinishCancelled {
		t.Errorf("finish %q, want cancelled", ev.Finish)
	}
	if code := <-answered; code != http.StatusBadGateway {
		t.Errorf("the client got %d, want 502", code)
	}
}
