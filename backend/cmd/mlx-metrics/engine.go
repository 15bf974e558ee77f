package main

import (
	"context"
	"errors"
	"os"

	"github.com/mlx-bun/mlx-metrics/gpu/engine"
)

// runEngine is `mlx-metrics engine`: the reference engine, a simulator of
// an OpenAI-compatible server (flags in gpu/engine).
func runEngine(ctx context.Context, args []string) error {
	err := engine.Command(ctx, args, os.Stderr)
	var ue *engine.UsageError
	if errors.As(err, &ue) {
		return &exitError{code: 2, err: err, usage: true}
	}
	return err
}
