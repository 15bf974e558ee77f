package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/benchapi"
	"github.com/mlx-bun/mlx-metrics/backend/internal/peers"
	"github.com/mlx-bun/mlx-metrics/shared/atomicfile"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/plural"
	"github.com/mlx-bun/mlx-metrics/shared/strictjson"
)

func runBenchExport(ctx context.Context, args []string) error {
	return benchExportCmd(ctx, args, osEnv())
}

// benchExportCmd writes a run's load points in another tool's shape, so
// that tool's own plotting and comparisons read bench-serve's figures.
func benchExportCmd(ctx context.Context, args []string, env cliEnv) error {
	fs, server, _ := clientFlags("bench export", "usage: mlx-metrics bench export --format vllm [--out FILE] [--server URL] RUN_DIR_OR_ID\n\n"+
		"Writes a run's load points as `vllm bench serve --save-result` objects, in a JSON array (the\n"+
		"summary.json `vllm bench sweep plot` reads), to stdout or --out FILE. The run is a run directory\n"+
		"(its run.json) or the id of a run in the backend's history.\n\n"+
		"examples:\n"+
		"  mlx-metrics bench export --format vllm runs/20261203T100000Z-ab12cd > summary.json\n"+
		"  mlx-metrics bench export --format vllm --out sweep/summary.json 20261203T100000Z-ab12cd", env, false)
	format := fs.String("format", "", "the `FORMAT` to write: vllm")
	out := fs.String("out", "", "write to `FILE` (replaced whole) instead of stdout")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *format != "vllm" {
		return usageErr("want --format vllm, got %q", termLine(*format))
	}
	if err := exactlyOne(pos, "run directory or id"); err != nil {
		return err
	}
	cells, finished, id, err := exportSource(ctx, pos[0], *server)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := peers.WriteVLLM(&buf, cells, finished, "mlx-metrics "+id); err != nil {
		return fmt.Errorf("run %s: %w", id, err)
	}
	if *out == "" {
		_, err := env.stdout.Write(buf.Bytes())
		return err
	}
	if err := atomicfile.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(env.stderr, "wrote %s of run %s to %s\n", plural.Count(points(cells), "load point", "load points"), id, *out)
	return nil
}

// exportSource reads the run's cells from its run directory (or run.json)
// when arg names one on disk, else from the backend's history by id.
func exportSource(ctx context.Context, arg, server string) ([]peers.ExportCell, time.Time, string, error) {
	path := arg
	if fi, err := os.Stat(arg); err == nil && fi.IsDir() {
		path = filepath.Join(arg, "run.json")
	}
	if f, err := os.Open(path); err == nil {
		defer f.Close()
		body, err := io.ReadAll(io.LimitReader(f, benchapi.MaxImportBytes+1))
		if err != nil {
			return nil, time.Time{}, "", err
		}
		if len(body) > benchapi.MaxImportBytes {
			return nil, time.Time{}, "", fmt.Errorf("%s is over %d MiB: not a run.json", path, benchapi.MaxImportBytes>>20)
		}
		var rec bench.RunRecord
		if err := strictjson.Decode(body, &rec, false); err != nil || rec.ID == "" {
			return nil, time.Time{}, "", fmt.Errorf("%s: not a bench-serve run.json", path)
		}
		var cells []peers.ExportCell
		for _, c := range rec.Cells {
			cells = append(cells, peers.ExportCell{Model: c.Model, Points: c.LoadPoints})
		}
		return cells, time.UnixMilli(rec.FinishedAt), rec.ID, nil
	} else if !os.IsNotExist(err) || !bench.RunIDPattern.MatchString(arg) {
		return nil, time.Time{}, "", err
	}
	c, err := newClient(server, "")
	if err != nil {
		return nil, time.Time{}, "", err
	}
	e, err := c.HistoryEntry(ctx, arg)
	if err != nil {
		return nil, time.Time{}, "", err
	}
	var cells []peers.ExportCell
	for _, cc := range e.Cells {
		cells = append(cells, peers.ExportCell{Model: cc.Model, Points: cc.LoadPoints})
	}
	return cells, time.UnixMilli(e.FinishedAt), e.ID, nil
}

func points(cells []peers.ExportCell) int {
	n := 0
	for _, c := range cells {
		n += len(c.Points)
	}
	return n
}
