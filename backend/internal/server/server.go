// Package server builds the Fiber application from the route table: the
// error convention, the body limits and timeouts each route's row says,
// and the guard ahead of the routes.
package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/mlx-bun/mlx-metrics/shared/apierror"
	"github.com/mlx-bun/mlx-metrics/shared/routes"
)

// APIPrefix is where the manifest's routes are served.
const APIPrefix = routes.Prefix

// Defaults of Options.
const (
	// DefaultReadTimeout bounds reading one request, headers and body: a
	// client dribbling its header a line at a time is cut off after it.
	// A 32 MiB batch at 2 MB/s fits.
	DefaultReadTimeout = 20 * time.Second
	// DefaultIdleTimeout bounds a kept-alive connection waiting for its
	// next request.
	DefaultIdleTimeout = 60 * time.Second
	// ShutdownTimeout bounds Shutdown whatever clients do.
	ShutdownTimeout = 5 * time.Second
)

// Options configure the application.
type Options struct {
	// BodyLimit bounds request bodies (event batches are the largest).
	BodyLimit int
	// ReadTimeout and IdleTimeout: DefaultReadTimeout and
	// DefaultIdleTimeout when 0.
	ReadTimeout, IdleTimeout time.Duration
	// WriteTimeout bounds writing an answer (DefaultWriteTimeout when 0),
	// but for the routes that stream (Route.Streams): the event streams
	// write for as long as the client reads, and bound what a client that
	// stops reading holds.
	WriteTimeout time.Duration
	// Budget bounds the request bodies held at once, across requests
	// (NewBudget's defaults when nil).
	Budget *Budget
	// OnError, when set, sees the status of every error answer, including
	// those made before any route ran (a body over BodyLimit, a request
	// not read within ReadTimeout): /healthz counts refusals with it.
	OnError func(c *fiber.Ctx, status int)
	// Guard, when set, checks every request before it is routed, and each
	// route's before its handler, from the token its row names.
	Guard Guard
}

// New builds the app serving routes, in their order: a request reaches the
// first that matches it (a handler may pass it on to the next with Next).
func New(opts Options, routes ...Route) *fiber.App {
	if opts.BodyLimit == 0 {
		opts.BodyLimit = 32 << 20
	}
	if opts.ReadTimeout == 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.WriteTimeout == 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.Budget == nil {
		opts.Budget = NewBudget(0, 0, nil)
	}
	errorHandler := ErrorHandler
	if opts.OnError != nil {
		errorHandler = func(c *fiber.Ctx, err error) error {
			opts.OnError(c, statusOf(err))
			return ErrorHandler(c, err)
		}
	}
	app := fiber.New(fiber.Config{
		AppName:               "mlx-metrics",
		BodyLimit:             opts.BodyLimit,
		ReadTimeout:           opts.ReadTimeout,
		IdleTimeout:           opts.IdleTimeout,
		DisableStartupMessage: true,
		ErrorHandler:          errorHandler,
		// Bodies are read by readBody, as they arrive: see body.go.
		StreamRequestBody: true,
		JSONEncoder:       marshalJSON,
	})
	// fasthttp's error for a request it cannot parse quotes the request's
	// start (a bearer token among its headers) and Fiber answers with it:
	// the client is told what failed, not shown what it sent.
	srv := app.Server()
	// answer writes err as the API's error where no route runs.
	answer := func(ctx *fasthttp.RequestCtx, err error) {
		c := app.AcquireCtx(ctx)
		defer app.ReleaseCtx(c)
		_ = errorHandler(c, err)
	}
	b := boundsOf(routes, opts.Guard, opts.BodyLimit, opts.WriteTimeout)
	srv.HeaderReceived = b.config
	parseFailed := srv.ErrorHandler
	srv.ErrorHandler = func(ctx *fasthttp.RequestCtx, err error) {
		parseFailed(ctx, withoutContents(err))
	}
	// A method Fiber does not route (lowercase, made up) would get its
	// plain-text 400; it gets the API's error, a 501 as HTTP has it for a
	// method the server does not know.
	route := srv.Handler
	srv.Handler = func(ctx *fasthttp.RequestCtx) {
		if !knownMethod(ctx.Method()) {
			answer(ctx, fiber.NewError(fiber.StatusNotImplemented,
				"unknown method; this server knows "+strings.Join(fiber.DefaultMethods, ", ")))
			return
		}
		route(ctx)
	}
	app.Use(func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
		if err := checkFraming(c); err != nil {
			return err
		}
		if opts.OnError != nil {
			c.Locals(onErrorKey{}, opts.OnError) // for Error
		}
		return c.Next()
	}, b.readBody(opts.Budget))
	if opts.Guard != nil {
		for _, h := range opts.Guard.Use() {
			app.Use(h)
		}
	}
	for _, r := range routes {
		handlers := []fiber.Handler{r.Handler}
		if opts.Guard != nil {
			if check := opts.Guard.Check(r); check != nil {
				handlers = []fiber.Handler{check, r.Handler}
			}
		}
		switch r.Method {
		case fiber.MethodGet:
			app.Get(r.Path, handlers...) // with HEAD
		case AnyMethod:
			app.All(r.Path, handlers...)
		default:
			app.Add(r.Method, r.Path, handlers...)
		}
	}
	// Anything unmatched answers in the API's error format, its path cut
	// (Fiber's own 404 quotes it whole).
	app.Use(unmatched)
	return app
}

// unmatched is the answer for a request no route took: 405 with Allow
// when the path has routes for other methods, else 404.
func unmatched(c *fiber.Ctx) error {
	err := c.Next()
	if statusOf(err) == fiber.StatusMethodNotAllowed {
		return fiber.NewError(fiber.StatusMethodNotAllowed,
			fmt.Sprintf("%s is not allowed here; allowed: %s", c.Method(), c.GetRespHeader(fiber.HeaderAllow)))
	}
	return fiber.NewError(fiber.StatusNotFound, "no route "+c.Method()+" "+clip(c.Path()))
}

// Shutdown stops app within ShutdownTimeout whatever its clients do: it
// stops accepting, lets requests in flight finish, and past the bound
// returns with the connections still open (the process is ending).
func Shutdown(app *fiber.App) error { return shutdown(app, ShutdownTimeout) }

func shutdown(app *fiber.App, d time.Duration) error {
	err := app.ShutdownWithTimeout(d)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("connections still open after %v were cut", d)
	}
	return err
}

// marshalJSON is encoding/json without its HTML escaping: every JSON
// answer is served as application/json with nosniff, read by programs and
// people, never inlined into a page, so "<home>" reads as written rather
// than as \u003chome\u003e.
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// clip bounds what an error message echoes of the request.
func clip(s string) string {
	const max = 200
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

// onErrorKey holds Options.OnError in a request's locals, so that an
// answer written with Error is seen as one returned to the error handler is.
type onErrorKey struct{}

// Error answers status with the API's JSON error body, and shows it to
// Options.OnError as the error handler shows a returned error.
func Error(c *fiber.Ctx, status int, message string) error {
	return errorBody(c, status, apierror.New(status, message))
}

// StorageFull answers 503 with the error type apierror.TypeStorageFull:
// the server's disk is too full for the request, which may succeed once
// space is freed.
func StorageFull(c *fiber.Ctx, message string) error {
	return errorBody(c, fiber.StatusServiceUnavailable,
		apierror.Body{Error: apierror.Detail{Message: message, Type: apierror.TypeStorageFull}})
}

func errorBody(c *fiber.Ctx, status int, body apierror.Body) error {
	if onError, ok := c.Locals(onErrorKey{}).(func(*fiber.Ctx, int)); ok {
		onError(c, status)
	}
	return write(c, status, body)
}

// write answers status with body; errors are never sniffed as anything but
// JSON, whichever route answers them.
func write(c *fiber.Ctx, status int, body apierror.Body) error {
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	return c.Status(status).JSON(body)
}

// statusOf is the status err answers with: a *fiber.Error keeps its own,
// anything else is a 500.
func statusOf(err error) int {
	var fe *fiber.Error
	if errors.As(err, &fe) {
		return fe.Code
	}
	return fiber.StatusInternalServerError
}

// knownMethod reports whether m is one of the methods Fiber routes.
func knownMethod(m []byte) bool {
	for _, k := range fiber.DefaultMethods {
		if string(m) == k {
			return true
		}
	}
	return false
}

// withoutContents is err with what fasthttp quotes of the request after
// its reason (". Buffer size=…, contents: …") cut off; errors.Is and As
// still see what err wraps (a header too large stays a 431).
func withoutContents(err error) error {
	msg := err.Error()
	i := strings.Index(msg, ". Buffer size=")
	if i < 0 {
		return err
	}
	return cutError{msg: clip(msg[:i]), err: err}
}

type cutError struct {
	msg string
	err error
}

func (e cutError) Error() string { return e.msg }
func (e cutError) Unwrap() error { return e.err }

// ErrorHandler turns any error a handler returns into the JSON error body:
// a *fiber.Error keeps its status, anything else is a 500.
func ErrorHandler(c *fiber.Ctx, err error) error {
	status := statusOf(err)
	return write(c, status, apierror.New(status, err.Error()))
}
