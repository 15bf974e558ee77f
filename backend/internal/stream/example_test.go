package stream_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/stream"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// fixed is a Source whose content never changes.
type fixed struct{}

func (fixed) Version() uint64 { return 1 }

func (fixed) Encode(now time.Time) (uint64, []byte, error) {
	return 1, []byte(fmt.Sprintf(`{"at":%d,"models":[]}`, now.UnixMilli())), nil
}

// A hub serves its source as server-sent events: each client gets the
// current snapshot at once, stamped with the time it is sent, then a
// frame whenever the source's version moves (at most one per Interval).
func Example() {
	hub := stream.New(fixed{}, stream.Options{Clock: clock.NewFake(time.UnixMilli(1796280000000))})
	defer hub.Close()
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/stream", hub.Handler)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go func() { _ = app.Listener(ln) }()
	defer func() { _ = app.Shutdown() }()

	resp, err := http.Get("http://" + ln.Addr().String() + "/stream")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	fmt.Println(resp.Header.Get("Content-Type"))
	r := bufio.NewReader(resp.Body)
	for data := false; ; {
		line, err := r.ReadString('\n')
		if err != nil || data && line == "\n" {
			break // the end of the first snapshot event
		}
		data = data || strings.HasPrefix(line, "data:")
		fmt.Print(line)
	}
	// Output:
	// text/event-stream
	// retry: 1500
	//
	// event: snapshot
	// data: {"at":1796280000000,"models":[]}
	// id: 1
}
