package prom

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// An exposition holds its slot until it has been written (or its request
// ended): past maxExpositions held, a scrape waits for a slot given back,
// and one that waits its whole while is a 503 to retry.
func TestExpositionsBounded(t *testing.T) {
	// In a synctest bubble: its clock runs only when every goroutine
	// blocks, so a wait past the bound ends at once, and synctest.Wait
	// tells when a scrape is waiting for a slot.
	synctest.Test(t, testExpositionsBounded)
}

func testExpositionsBounded(t *testing.T) {
	app := fiber.New()
	slots := make(chan struct{}, 2)
	exposition := func(ctx *fasthttp.RequestCtx) { ctx.WriteString("# exposition\n") }
	serve := bounded(exposition, slots, 0)
	// scrape runs one scrape; off the test goroutine too, so it reports
	// an error rather than failing the test itself.
	scrape := func() (*fasthttp.RequestCtx, error) {
		var fctx fasthttp.RequestCtx
		c := app.AcquireCtx(&fctx)
		defer app.ReleaseCtx(c)
		if err := serve(c); err != nil {
			if err := app.Config().ErrorHandler(c, err); err != nil {
				return nil, err
			}
		}
		return &fctx, nil
	}
	must := func(ctx *fasthttp.RequestCtx, err error) *fasthttp.RequestCtx {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return ctx
	}
	held := []*fasthttp.RequestCtx{must(scrape()), must(scrape())} // written to no one yet
	if got := must(scrape()); got.Response.StatusCode() != fiber.StatusServiceUnavailable || string(got.Response.Header.Peek(fiber.HeaderRetryAfter)) != "1" {
		t.Fatalf("a scrape past the bound: %d, Retry-After %q", got.Response.StatusCode(), got.Response.Header.Peek(fiber.HeaderRetryAfter))
	}
	// The first is written (Body reads its stream to the end and closes it).
	if body := string(held[0].Response.Body()); body != "# exposition\n" {
		t.Fatalf("the held exposition: %q", body)
	}
	next := must(scrape())
	if next.Response.StatusCode() != fiber.StatusOK || !next.Response.IsBodyStream() {
		t.Fatalf("a scrape once a slot is back: %d", next.Response.StatusCode())
	}
	// A scrape waiting for a slot gets the one given back.
	serve = bounded(exposition, slots, time.Minute)
	type result struct {
		ctx *fasthttp.RequestCtx
		err error
	}
	waited := make(chan result)
	go func() {
		ctx, err := scrape()
		waited <- result{ctx, err}
	}()
	synctest.Wait() // the scrape waits: both slots are held
	next.Response.Reset()
	r := <-waited
	if next = must(r.ctx, r.err); next.Response.StatusCode() != fiber.StatusOK {
		t.Fatalf("a scrape that waited: %d", next.Response.StatusCode())
	}
	// A request that ends without writing its exposition gives it back too.
	held[1].Response.Reset()
	next.Response.Reset()
	if len(slots) != 0 {
		t.Fatalf("%d slots still held", len(slots))
	}
}
