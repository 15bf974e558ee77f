package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mlx-bun/mlx-metrics/backend/internal/apiclient"
	"github.com/mlx-bun/mlx-metrics/backend/internal/benchapi"
	"github.com/mlx-bun/mlx-metrics/backend/internal/history"
	"github.com/mlx-bun/mlx-metrics/backend/internal/homelock"
	"github.com/mlx-bun/mlx-metrics/backend/internal/peers"
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
	version := fs.String("source-version", "", "the `VERSION` of the tool that wrote a result file, where the file does not say (vllm bench serve's never does)")
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "usage: mlx-metrics bench import [--server URL] [--token TOKEN] [--home DIR] [--source-version V] RUN_DIR_OR_FILE...\n\n"+
			"Keeps finished runs recorded outside serve (a hand `bench run --out DIR`, another machine) in\n"+
			"history, so they appear in `bench list` and the panel. RUN_DIR holds the run's run.json (or name\n"+
			"the file itself). A result file another tool wrote is read too, told by its shape: `vllm bench\n"+
			"serve --save-result` JSON, GuideLLM's benchmarks.json, AIPerf's profile_export_aiperf.json; each\n"+
			"becomes a run of load points named by its content, so importing it twice keeps it once. A run\n"+
			"already in history is left as it is.\n\n"+
			"examples:\n"+
			"  mlx-metrics bench import runs/20261203T100000Z-ab12cd          # into the running backend\n"+
			"  mlx-metrics bench import --home ~/.mlx-metrics runs/*          # serve not running\n"+
			"  mlx-metrics bench import --source-version 0.11.0 vllm-result.json\n\nflags:")
		fs.PrintDefaults()
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErr("want at least one run directory or result file, got 0 arguments")
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
		body, dir, problems, err := readImport(arg, peers.Options{Version: *version})
		if err == nil {
			var note string
			if note, err = keep(body, dir); err == nil {
				fmt.Fprintf(env.stdout, "%s: %s\n", arg, termLine(note))
				printImportProblems(env.stdout, problems)
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

// readImport reads arg's run.json (arg is the run directory or the file),
// or a result file another tool wrote, converted to a run.json; it says
// which directory holds it, and the problems of a converted file.
func readImport(arg string, opts peers.Options) (body []byte, dir string, problems []string, err error) {
	path := arg
	if fi, err := os.Stat(arg); err == nil && fi.IsDir() {
		path = filepath.Join(arg, "run.json")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil {
		opts.Modified = fi.ModTime()
		if fi.Size() > peers.MaxFileBytes {
			return nil, "", nil, fmt.Errorf("%s is over %d MiB: not a run.json or a tool's result", path, peers.MaxFileBytes>>20)
		}
	}
	body, err = io.ReadAll(io.LimitReader(f, peers.MaxFileBytes+1))
	if err != nil {
		return nil, "", nil, err
	}
	if len(body) > peers.MaxFileBytes {
		return nil, "", nil, fmt.Errorf("%s is over %d MiB: not a run.json or a tool's result", path, peers.MaxFileBytes>>20)
	}
	if dir, err = filepath.Abs(filepath.Dir(path)); err != nil {
		return nil, "", nil, err
	}
	if peers.Detect(body) == "" {
		if !looksLikeRunRecord(body) {
			_, err := peers.Decode(body, opts) // says what each tool's file looks like
			return nil, "", nil, fmt.Errorf("%s: %w, nor a bench-serve run.json (an object with id and cells)", path, err)
		}
		if len(body) > benchapi.MaxImportBytes {
			return nil, "", nil, fmt.Errorf("%s is over %d MiB: not a run.json", path, benchapi.MaxImportBytes>>20)
		}
		return body, dir, nil, nil
	}
	rec, err := peers.Decode(body, opts)
	if err != nil {
		return nil, "", nil, fmt.Errorf("%s: %w", path, err)
	}
	body, err = json.Marshal(rec)
	return body, dir, rec.Problems, err
}

// looksLikeRunRecord says b is a JSON object with an id and cells, as every
// run.json: anything else is read as one of the tools' files, whose errors
// say what was expected.
func looksLikeRunRecord(b []byte) bool {
	var probe struct {
		ID    json.RawMessage `json:"id"`
		Cells json.RawMessage `json:"cells"`
	}
	return json.Unmarshal(b, &probe) == nil && probe.ID != nil && probe.Cells != nil
}

// printImportProblems lists what a converted file lacked, a few lines at most.
func printImportProblems(w io.Writer, problems []string) {
	const most = 5
	for i, p := range problems {
		if i == most {
			fmt.Fprintf(w, "  (%d more problems: bench show)\n", len(problems)-most)
			break
		}
		fmt.Fprintf(w, "  problem: %s\n", termLine(p))
	}
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
	switch {
	case e.Source != nil:
		profile = strings.TrimSpace(e.Source.Tool + " " + e.Source.Version)
	case profile == "":
		profile = "no profile" // bench run without --profile
	}
	return fmt.Sprintf("kept run %s (%s, %s, %s)", e.ID, profile, plural.Count(len(e.Cells), "cell", "cells"), done)
}
