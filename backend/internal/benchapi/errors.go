package benchapi

import (
	"errors"
	"log/slog"
	"syscall"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/history"
	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/backend/internal/redact"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/logkey"
)

// maxEcho bounds how much of a client's input a message quotes back.
const maxEcho = 64

// capEcho is s cut to maxEcho bytes (at a rune boundary) with an ellipsis.
func capEcho(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	i := maxEcho
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// SafeMessage is err as a client may read it (redact.Message).
func SafeMessage(err error) string { return redact.Message(err) }

// storageError answers a failure of the disk under a route: 503 (it is the
// server's storage, and may come back), with what failed and why but no
// path; the full error goes to the server's log. A full disk (history's
// reserve reached, or ENOSPC) is said by the error's type as well.
func (a *API) storageError(c *fiber.Ctx, what string, err error) error {
	logging.Or(a.opts.Logger).Error("benchapi: "+c.Method()+" "+c.Path()+": "+what, logging.Err(err),
		slog.String(logkey.Method, c.Method()), slog.String(logkey.Route, c.Path()))
	msg := "could not " + what + ": " + SafeMessage(err)
	if errors.Is(err, history.ErrFull) || errors.Is(err, syscall.ENOSPC) {
		return server.StorageFull(c, msg)
	}
	return server.Error(c, fiber.StatusServiceUnavailable, msg)
}
