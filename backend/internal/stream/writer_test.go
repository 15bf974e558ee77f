package stream

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
)

// writerServer serves GET and HEAD /stream with a Writer that writes
// events until one fails, and reports on ended how many it wrote; the
// number of connections handed over so far (Hijack's done) is in *over.
func writerServer(t *testing.T, timeout time.Duration, event []byte, count int) (addr string, ended <-chan int, over *atomic.Int64) {
	t.Helper()
	done := make(chan int, 4)
	over = new(atomic.Int64)
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	handler := func(c *fiber.Ctx) error {
		SetHeaders(c)
		Hijack(c, timeout, func(w *Writer) {
			n := 0
			for ; n < count; n++ {
				if w.Event(event) != nil {
					break
				}
			}
			done <- n
		}, func() { over.Add(1) })
		return nil
	}
	app.Get("/stream", handler)
	app.Head("/stream", handler)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go server.Serve(app, ln) // as the backend serves
	t.Cleanup(func() { _ = app.Shutdown() })
	return ln.Addr().String(), done, over
}

// A Writer's events reach a reading client as one stream, each a chunk,
// with the closing chunk at the end; a client that stops reading is
// dropped once a write has not completed within the timeout, instead of
// holding the writer's goroutine for ever.
func TestWriter(t *testing.T) {
	t.Run("a reading client gets every event and the end", func(t *testing.T) {
		addr, ended, over := writerServer(t, time.Minute, []byte("event: jobs\ndata: {}\n\n"), 3)
		res, err := http.Get("http://" + addr + "/stream")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" || res.Header.Get("X-Accel-Buffering") != "no" {
			t.Errorf("headers %v", res.Header)
		}
		body, err := io.ReadAll(res.Body) // ends only at the closing chunk
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(string(body), "event: jobs\n"); got != 3 {
			t.Errorf("%d events in %q, want 3", got, body)
		}
		if n := <-ended; n != 3 {
			t.Errorf("wrote %d", n)
		}
		waitHandedOver(t, over, 1)
	})
	t.Run("a HEAD request gets the head alone, and the connection is handed over", func(t *testing.T) {
		addr, ended, over := writerServer(t, time.Minute, []byte("data: 1\n\n"), 3)
		res, err := http.Head("http://" + addr + "/stream")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if ct := res.Header.Get("Content-Type"); res.StatusCode != http.StatusOK || ct != "text/event-stream" {
			t.Errorf("status %d, content type %q", res.StatusCode, ct)
		}
		waitHandedOver(t, over, 1)
		select {
		case n := <-ended:
			t.Errorf("serve ran for a HEAD request (wrote %d)", n)
		default:
		}
	})
	t.Run("a client that stops reading is dropped", func(t *testing.T) {
		event := []byte("data: " + strings.Repeat("x", 256<<10) + "\n\n")
		addr, ended, _ := writerServer(t, 50*time.Millisecond, event, 1<<20)
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
		if _, err := fmt.Fprintf(conn, "GET /stream HTTP/1.1\r\nHost: %s\r\n\r\n", addr); err != nil {
			t.Fatal(err)
		}
		// Never read: the socket's buffers fill, a write stalls past the
		// timeout and the writer ends.
		select {
		case n := <-ended:
			if n >= 1<<20 {
				t.Fatalf("wrote every event to a client that does not read")
			}
		case <-time.After(time.Minute):
			t.Fatal("the writer still writes to a client that stopped reading")
		}
	})
	t.Run("HTTP/1.0 ends at the close", func(t *testing.T) {
		addr, ended, _ := writerServer(t, time.Minute, []byte("data: 1\n\n"), 2)
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET /stream HTTP/1.0\r\n\r\n")
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatal(err)
		}
		if string(body) != "data: 1\n\ndata: 1\n\n" || len(res.TransferEncoding) != 0 {
			t.Errorf("body %q, transfer encoding %v", body, res.TransferEncoding)
		}
		<-ended
	})
}

// waitHandedOver waits until Hijack's done has run want times.
func waitHandedOver(t *testing.T, over *atomic.Int64, want int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); over.Load() != want; {
		if time.Now().After(deadline) {
			t.Fatalf("done ran %d times, want %d", over.Load(), want)
		}
		time.Sleep(time.Millisecond)
	}
}
