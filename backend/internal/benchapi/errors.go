package benchapi

import (
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"regexp"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
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

// absPath matches what looks like an absolute file path in a message.
var absPath = regexp.MustCompile(`(?:/[^\s/:"'()]+){2,}/?`)

// SafeMessage is err as a client may read it: the paths a *fs.PathError or
// *os.LinkError carries dropped, and anything else that looks like an
// absolute path (a storage library's own messages) replaced, since the
// server's layout is none of a client's business.
func SafeMessage(err error) string {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = fmt.Errorf("%s: %w", pe.Op, pe.Err)
	case errors.As(err, &le):
		err = fmt.Errorf("%s: %w", le.Op, le.Err)
	}
	return absPath.ReplaceAllString(err.Error(), "<path>")
}

// storageError answers a failure of the disk under a route: 503 (it is the
// server's storage, and may come back), with what failed and why but no
// path; the full error goes to the server's log.
func storageError(c *fiber.Ctx, what string, err error) error {
	log.Printf("benchapi: %s %s: %s: %v", c.Method(), c.Path(), what, err)
	return server.Error(c, fiber.StatusServiceUnavailable, "could not "+what+": "+SafeMessage(err))
}
