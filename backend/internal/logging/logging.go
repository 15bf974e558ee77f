// Package logging builds serve's *slog.Logger: leveled and structured, as
// text (slog's key=value lines) by default or JSON (one object a line),
// on stderr. Every package that logs takes a *slog.Logger in its options
// (nil meaning slog.Default(), which serve sets to this one); the keys
// their lines carry are named once, in shared/logkey.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/mlx-bun/mlx-metrics/shared/logkey"
)

// The formats --log-format takes.
const (
	FormatText = "text"
	FormatJSON = "json"
)

// New is a logger writing to w in format (FormatText or FormatJSON, text
// when empty) at level and above: debug, info (when empty), warn or error.
func New(w io.Writer, format, level string) (*slog.Logger, error) {
	lv, err := ParseLevel(level)
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "", FormatText:
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case FormatJSON:
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", format)
}

// ParseLevel reads debug, info, warn or error (any case; info when empty).
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "", "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("log level %q: want debug, info, warn or error", s)
}

// Or is l, or slog.Default() when l is nil: what a package's nil
// Options.Logger means.
func Or(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}

// Discard is a logger that writes nothing.
func Discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// Err is the attribute of a failure, under logkey.Err.
func Err(err error) slog.Attr { return slog.Any(logkey.Err, err) }
