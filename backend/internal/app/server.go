package app

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
)

// Server is the HTTP server as a part: it serves an application on a bound
// listener until Close.
type Server struct {
	app            *fiber.App
	beforeShutdown func(context.Context) error
	done           chan struct{}
	err            error // the listener's result, set before done closes
}

// Serve serves app on ln in the background. beforeShutdown, when not nil,
// runs at the start of Close, before the server's Shutdown: it ends the
// requests that would otherwise hold Shutdown open (an event stream, a
// run's event follower), typically with App.CloseFirst on the parts that
// feed them, as net/http's RegisterOnShutdown is for hijacked connections.
func Serve(app *fiber.App, ln net.Listener, beforeShutdown func(context.Context) error) *Server {
	s := &Server{app: app, beforeShutdown: beforeShutdown, done: make(chan struct{})}
	go func() {
		s.err = server.Serve(app, ln)
		close(s.done)
	}()
	return s
}

// Done is closed when the server stops serving, on its own (Err says why)
// or after Close.
func (s *Server) Done() <-chan struct{} { return s.done }

// Err is why the server stopped serving; it is valid once Done is closed.
func (s *Server) Err() error { return s.err }

// Handlers are none: the routes are the application's already.
func (s *Server) Handlers(*Handlers) {}

// Close runs beforeShutdown, then shuts the server down within
// server.ShutdownTimeout (server.Shutdown), unless it stopped serving on
// its own already. A Shutdown error reads "shutdown: …".
func (s *Server) Close(ctx context.Context) error {
	var errs []error
	if s.beforeShutdown != nil {
		errs = append(errs, s.beforeShutdown(ctx))
	}
	select {
	case <-s.done:
	default:
		if err := server.Shutdown(s.app); err != nil {
			errs = append(errs, fmt.Errorf("shutdown: %w", err))
		}
	}
	return errors.Join(errs...)
}
