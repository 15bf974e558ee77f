package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/mlx-bun/mlx-metrics/backend/internal/apiclient"
	"github.com/mlx-bun/mlx-metrics/backend/internal/benchapi"
	"github.com/mlx-bun/mlx-metrics/backend/internal/history"
	"github.com/mlx-bun/mlx-metrics/backend/internal/homelock"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/plural"
)

func runBenchImport(ctx context.Context, args []string) error {
	return benchImportCmd(ctx, args, osEnv())
}

// benchImportCmd keeps runs recorded by hand (`bench run --out DIR`, another
// machine) in a history: a running backend's, through POST /history, or,
// with --home, the history under that home while no serve holds it. Each
// run is taken on its own: a bad one is reported and the others still go in.
func benchImportCmd(ctx context.Context, args []string, env cliEnv) error {
	fs := flag.NewFlagSet("bench import", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	server := fs.String("server", defaultServer(), "backend `URL` to import into (env MLX_METRICS_SERVER)")
	token := fs.String("token", os.Getenv("MLX_METRICS_TOKEN"), "bearer `TOKEN` the backend requires of changes (env MLX_METRICS_TOKEN)")
	home := fs.String("home", "", "import into the history under `DIR` directly, with no backend running on it (serve's --home)")
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "usage: mlx-metrics bench import [--server URL] [--token TOKEN] [--home DIR] RUN_DIR...\n\n"+
			"Keeps finished runs recorded outside serve (a hand `bench run --out DIR`, another machine) in\n"+
			"history, so they appear in `bench list` and the panel. RUN_DIR holds the run's run.json (or name\n"+
			"the file itself). A run already in history is left as it is.\n\n"+
			"examples:\n"+
			"  mlx-metrics bench import runs/20261203T100000Z-ab12cd          # into the running backend\n"+
			"  mlx-metrics bench import --home ~/.mlx-metrics runs/*          # serve not running\n\nflags:")
		fs.PrintDefaults()
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErr("want at least one run directory, got 0 arguments")
	}
	var keep func(body []byte, dir string) (string, error)
	if *home != "" {
		lock, err := homelock.Acquire(*home, "bench import")
		var inUse *homelock.InUseError
		if errors.As(err, &inUse) {
			return fmt.Errorf("%s is held by %s: import through it, without --home (--server URL when it is not on %s)", *home, inUse.Holder(), defaultServer())
		}
		defer lock.Release()
		h, err := history.Open(filepath.Join(*home, "metrics", "history"), history.Options{})
		if err != nil && historyHeld(err) {
			return fmt.Errorf("serve is running on %s and holds its history: import through it, without --home (--server URL when it is not on %s)", *home, defaultServer())
		}
		if err != nil {
			return fmt.Errorf("open the history under %s: %w", *home, err)
		}
		defer h.Close()
		keep = func(body []byte, dir string) (string, error) { return importLocal(h, body, dir) }
	} else {
		c, err := newClient(*server, *token)
		if err != nil {
			return err
		}
		keep = func(body []byte, dir string) (string, error) { return importRemote(ctx, c, body, dir) }
	}
	failed := 0
	for _, arg := range pos {
		body, dir, err := readRunRecord(arg)
		if err == nil {
			var note string
			if note, err = keep(body, dir); err == nil {
				fmt.Fprintf(env.stdout, "%s: %s\n", arg, termLine(note))
				continue
			}
		}
		failed++
		fmt.Fprintf(env.stderr, "mlx-metrics: %s: %s\n", arg, termLine(err.Error()))
	}
	if failed > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%s of %d not imported", plural.Count(failed, "run", "runs"), len(pos))}
	}
	return nil
}

// readRunRecord reads arg's run.json (arg is the run directory or the file),
// bounded as the route bounds it, and says which directory holds it.
func readRunRecord(arg string) (body []byte, dir string, err error) {
	path := arg
	if fi, err := os.Stat(arg); err == nil && fi.IsDir() {
		path = filepath.Join(arg, "run.json")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	body, err = io.ReadAll(io.LimitReader(f, benchapi.MaxImportBytes+1))
	if err != nil {
		return nil, "", err
	}
	if len(body) > benchapi.MaxImportBytes {
		return nil, "", fmt.Errorf("%s is over %d MiB: not a run.json", path, benchapi.MaxImportBytes>>20)
	}
	dir, err = filepath.Abs(filepath.Dir(path))
	return body, dir, err
}

func importLocal(h *history.Store, body []byte, dir string) (string, error) {
	e, err := benchapi.DecodeImport(body, dir, clock.Real{})
	if err != nil {
		return "", err
	}
	switch err := h.PutNew(e); {
	case errors.Is(err, history.ErrExists):
		return fmt.Sprintf("run %s is in history already; left as it is", e.ID), nil
	case err != nil:
		return "", err
	}
	return kept(e), nil
}

func importRemote(ctx context.Context, c *apiclient.Client, body []byte, dir string) (string, error) {
	e, err := c.Import(ctx, body, dir)
	if errors.Is(err, apiclient.ErrAlreadyKept) {
		return "in history already; left as it is", nil
	}
	if err != nil {
		return "", err
	}
	return kept(e), nil
}

func kept(e bench.HistoryEntry) string {
	done := "complete"
	if !e.Complete {
		done = "incomplete"
	}
	profile := e.Profile
	if profile == "" {
		profile = "no profile" // bench run without --profile
	}
	return fmt.Sprintf("kept run %s (%s, %s, %s)", e.ID, profile, plural.Count(len(e.Cells), "cell", "cells"), done)
}
