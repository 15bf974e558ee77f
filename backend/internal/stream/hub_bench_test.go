package stream

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// BenchmarkFanOut measures one throttle tick delivering a fresh 16 KiB
// snapshot frame (about the size of a busy host's) to 100 and 1,000
// loopback clients: the time from the tick until every client has read
// the frame, and that time per client.
func BenchmarkFanOut(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("clients=%d", n), func(b *testing.B) { benchFanOut(b, n) })
	}
}

func benchFanOut(b *testing.B, clients int) {
	src := &source{version: 1, pad: 16 << 10}
	clk := clock.NewFake(t0)
	ticked := make(chan struct{})
	hub := New(src, Options{Clock: clk, onTick: func() { ticked <- struct{}{} }})
	app := fiber.New(fiber.Config{DisableStartupMessage: true, Concurrency: 1 << 16})
	app.Get("/stream", hub.Handler)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	defer func() {
		hub.Close()
		_ = app.ShutdownWithTimeout(5 * time.Second)
	}()

	var pending atomic.Pointer[sync.WaitGroup]
	var connected sync.WaitGroup
	connected.Add(clients)
	for i := 0; i < clients; i++ {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatalf("client %d: %v", i, err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET /stream HTTP/1.1\r\nHost: bench\r\n\r\n")
		go func() {
			br := bufio.NewReaderSize(conn, 64<<10)
			first := true
			for {
				line, err := br.ReadSlice('\n')
				if err != nil && err != bufio.ErrBufferFull {
					return
				}
				// Chunked framing aside, each frame has one "id: " line.
				if v, ok := bytes.CutPrefix(line, []byte("id: ")); ok {
					if _, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64); err == nil {
						if first {
							first = false
							connected.Done()
						} else if wg := pending.Load(); wg != nil {
							wg.Done()
						}
					}
				}
			}
		}()
	}
	connected.Wait()

	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		wg := new(sync.WaitGroup)
		wg.Add(clients)
		pending.Store(wg)
		src.set(uint64(i + 2))
		go clk.Advance(500 * time.Millisecond)
		<-ticked
		wg.Wait()
	}
	b.StopTimer()
	b.ReportMetric(float64(clients)*float64(b.N)/b.Elapsed().Seconds(), "frames/s")
	// The per-client cost of a frame, the clients' reading included (they
	// run in this process).
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(clients)/float64(b.N), "ns/client-frame")
}
