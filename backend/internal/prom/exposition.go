package prom

import (
	"bytes"
	"fmt"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
)

// maxExpositions bounds the expositions rendered and not yet written. An
// exposition is rendered whole before it is sent (141 MB for 1,024
// long-named models), and a scraper that does not read holds it until the
// server's write timeout: past the bound a scrape waits for a slot, up to
// slotWait (Prometheus's default scrape timeout), then is told to come back
// (503, Retry-After: 1). Slow scrapers hold this many at most; scrapes
// that arrive together only wait their turn.
const (
	maxExpositions = 4
	slotWait       = 10 * time.Second
)

// bounded serves the exposition h renders, holding one of slots from
// before it is rendered until it has been written, or the request ended
// without it; a scrape waits up to wait for a slot.
func bounded(h fasthttp.RequestHandler, slots chan struct{}, wait time.Duration) fiber.Handler {
	return func(c *fiber.Ctx) error {
		select {
		case slots <- struct{}{}:
		default:
			t := time.NewTimer(wait) // wall-clock: it guards a real socket
			select {
			case slots <- struct{}{}:
				t.Stop()
			case <-t.C:
				c.Set(fiber.HeaderRetryAfter, "1")
				return server.Error(c, fiber.StatusServiceUnavailable,
					fmt.Sprintf("%d expositions are being written already; try again in a second", cap(slots)))
			}
		}
		h(c.Context())
		body := c.Response().SwapBody(nil)
		c.Context().SetBodyStream(&heldBody{Reader: bytes.NewReader(body), release: func() { <-slots }}, len(body))
		return nil
	}
}

// heldBody is an exposition on its way to the client. fasthttp closes it
// once it is written, or when the request ends otherwise (a HEAD, a
// connection that failed), which gives its slot back.
type heldBody struct {
	*bytes.Reader
	once    sync.Once
	release func()
}

func (b *heldBody) Close() error {
	b.once.Do(b.release)
	return nil
}
