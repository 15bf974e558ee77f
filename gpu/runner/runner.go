// Package runner is the bench-serve runner: for each cell of a plan it
// starts the server, measures it over real HTTP with the streaming OpenAI
// API (gpu/loadgen), and writes run.json, report.md and the servers' logs.
// It runs as its own process (`mlx-metrics bench run`) so that nothing a
// benchmark does can take the backend down.
//
// Its standard output is a contract with the backend: "=== <cell key> ==="
// when a cell starts and "  problem: <text>" for each problem; other lines
// are free log text.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/mlx-bun/mlx-metrics/gpu/probe"
	"github.com/mlx-bun/mlx-metrics/shared/atomicfile"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// Exit codes of `mlx-metrics bench run`.
const (
	ExitComplete   = 0   // every applicable cell measured
	ExitIncomplete = 1   // the run finished with a failed cell
	ExitUsage      = 2   // bad flags or plan
	ExitCancelled  = 143 // stopped by SIGTERM (128+15)
)

// Options is one run.
type Options struct {
	Plan    bench.Plan
	Profile string
	ID      string
	OutDir  string
	// Self is the executable that {self} stands for.
	Self string
	// Out receives the progress lines.
	Out io.Writer
	// Machine describes where the run happens (probe.Machine by default).
	Machine func() bench.Machine
	// StopGrace is how long a server gets between SIGTERM and SIGKILL.
	StopGrace time.Duration
	// SampleEvery is the memory sampling period (250 ms by default).
	SampleEvery time.Duration
	// Strict fails a measured cell whose decode runs are unstable, so the
	// run is incomplete (exit 1) rather than complete with a tag.
	Strict bool
	// AttachGrace is how long an attached server may refuse connections
	// before its cell fails (5 s by default).
	AttachGrace time.Duration
}

// Run measures every cell and writes the record, also when ctx is
// cancelled (SIGTERM) or a cell fails. The record's ExitCode is the
// process's exit code. Only a failure to write the record (or to make the
// run directory) is an error; it names files by their base name only.
func Run(ctx context.Context, o Options) (bench.RunRecord, error) {
	if o.Machine == nil {
		o.Machine = probe.Machine
	}
	if o.StopGrace == 0 {
		o.StopGrace = 10 * time.Second
	}
	if o.SampleEvery == 0 {
		o.SampleEvery = 250 * time.Millisecond
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	start := time.Now()
	if o.ID == "" {
		o.ID = bench.NewRunID(start, fmt.Sprintf("%04x", os.Getpid()&0xffff))
	}
	rec := bench.RunRecord{
		ID: o.ID, Profile: o.Profile, Plan: o.Plan,
		StartedAt: start.UnixMilli(), Cells: []bench.CellResult{},
	}
	logDir := filepath.Join(o.OutDir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return rec, fmt.Errorf("the run directory could not be made: %w", pathless("mkdir", "logs", err))
	}
	rec.Machine = o.Machine()
	cells := "cells"
	if len(o.Plan.Cells) == 1 {
		cells = "cell"
	}
	fmt.Fprintf(o.Out, "run %s: %d %s on %s (%s; %s)\n", rec.ID, len(o.Plan.Cells), cells, rec.Machine.Host, rec.Machine.Chip, rec.Machine.GPU)

	gpu, gpuErr := probe.OpenGPU()
	if gpu != nil {
		defer gpu.Close()
	}
	r := &run{o: o, logDir: logDir, gpu: gpu, gpuErr: gpuErr, phases: o.Plan.Phases.Defaults()}
	for i, cell := range o.Plan.Cells {
		key := cell.KeyOrDefault()
		res := bench.CellResult{Key: key, Model: cell.Model, Kind: cell.Kind, Configuration: cell.Configuration, Samples: []bench.Sample{}}
		switch {
		case ctx.Err() != nil:
			// Not started, so no cell line: progress counts cells begun.
			res.Status, res.Note = bench.CellFailed, "not run: the run was cancelled"
		case cell.Skip != "":
			fmt.Fprintf(o.Out, "=== %s ===\n", key)
			res.Status, res.Note = bench.CellSkipped, cell.Skip
			fmt.Fprintf(o.Out, "skipped: %s\n", cell.Skip)
		default:
			fmt.Fprintf(o.Out, "=== %s ===\n", key)
			r.measure(ctx, i, cell, &res)
		}
		for _, p := range res.Problems {
			fmt.Fprintf(o.Out, "  problem: %s\n", oneLine(key+": "+p))
			rec.Problems = append(rec.Problems, key+": "+p)
		}
		rec.Cells = append(rec.Cells, res)
	}

	rec.FinishedAt = time.Now().UnixMilli()
	rec.Complete = true
	for _, c := range rec.Cells {
		if c.Status == bench.CellFailed {
			rec.Complete = false
		}
	}
	switch {
	case ctx.Err() != nil:
		rec.Cancelled, rec.Complete, rec.ExitCode = true, false, ExitCancelled
		rec.Problems = append(rec.Problems, "the run was cancelled")
	case !rec.Complete:
		rec.ExitCode = ExitIncomplete
	}
	if err := writeRecord(o.OutDir, rec); err != nil {
		return rec, fmt.Errorf("the run's record could not be saved: %w", err)
	}
	fmt.Fprintf(o.Out, "run %s finished: complete=%v exit=%d (%s)\n", rec.ID, rec.Complete, rec.ExitCode, o.OutDir)
	return rec, nil
}

var lineBreaks = regexp.MustCompile(`\s*[\r\n]+\s*`)

// oneLine keeps a problem on its line: the backend reads lines.
func oneLine(s string) string { return lineBreaks.ReplaceAllString(s, " | ") }

// writeRecord writes report.md, then run.json, each atomically: run.json
// is what the backend reads, so it comes last and a failure before it
// leaves no record that hides the failure's reason (the runner's last
// stderr line, which the backend's job keeps).
func writeRecord(dir string, rec bench.RunRecord) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := saveFile(filepath.Join(dir, "report.md"), []byte(Report(rec))); err != nil {
		return err
	}
	return saveFile(filepath.Join(dir, "run.json"), b)
}

// saveFile is writeAtomic; tests replace it to fail as a full disk does.
var saveFile = writeAtomic

// writeAtomic replaces path with b through atomicfile (a temporary file of
// its own, synced, renamed over path: a reader or a crash sees the old
// file or the new one, never a part), then syncs the directory so the
// rename itself survives a crash. Errors name the file, not the temporary
// one.
func writeAtomic(path string, b []byte) error {
	if err := atomicfile.WriteFile(path, b, 0o644); err != nil {
		return saveErr(path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync() // best effort: not every file system syncs a directory
		d.Close()
	}
	return nil
}

// saveErr is "save <file>: <cause>", the cause without the temporary
// file's name ("no space left on device", "permission denied"), and the
// file by its base name: the backend's job shows the runner's last stderr
// line through its API, which never names the server's paths.
func saveErr(path string, err error) error {
	return pathless("save", filepath.Base(path), err)
}

// pathless is "<op> <name>: <cause>", the cause stripped of the path the
// os package put in it.
func pathless(op, name string, err error) error {
	var pe *os.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	return &os.PathError{Op: op, Path: name, Err: err}
}
