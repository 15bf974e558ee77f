package logging

import (
	"context"
	"log/slog"
)

// Func is a logger handing each line's level and message to fn (its
// attributes dropped): for a test to see what a package logs. fn is called
// from the logging goroutine, so it does its own locking.
func Func(fn func(level slog.Level, msg string)) *slog.Logger {
	return slog.New(funcHandler(fn))
}

type funcHandler func(slog.Level, string)

func (funcHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h funcHandler) Handle(_ context.Context, r slog.Record) error {
	h(r.Level, r.Message)
	return nil
}
func (h funcHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h funcHandler) WithGroup(string) slog.Handler      { return h }
