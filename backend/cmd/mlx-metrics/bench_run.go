package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/mlx-bun/mlx-metrics/gpu/runner"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// runBenchRun is `mlx-metrics bench run`: the runner process the backend's
// job service starts (isolation: task), also usable by hand. Exit status: 0
// every applicable cell measured, 1 incomplete, 2 usage or plan error, 143
// stopped by SIGTERM (the record is written in every case but 2).
func runBenchRun(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench run", flag.ContinueOnError)
	planPath := fs.String("plan", "", "plan file (JSON; see `mlx-metrics bench plan`) (required)")
	out := fs.String("out", "", "run directory: run.json, report.md, logs/ (required)")
	id := fs.String("id", "", "run id (default: from the start time)")
	profile := fs.String("profile", "", "profile name the plan came from, for the record")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: mlx-metrics bench run --plan FILE --out DIR [--id ID] [--profile NAME]\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return &exitError{code: runner.ExitUsage, err: err}
	}
	if *planPath == "" || *out == "" || fs.NArg() > 0 {
		fs.Usage()
		return &exitError{code: runner.ExitUsage, err: errors.New("--plan and --out are required, and nothing else")}
	}
	plan, err := readPlan(*planPath)
	if err != nil {
		return &exitError{code: runner.ExitUsage, err: err}
	}
	self, err := os.Executable()
	if err != nil {
		return &exitError{code: runner.ExitUsage, err: fmt.Errorf("finding this executable for {self}: %w", err)}
	}
	rec, err := runner.Run(ctx, runner.Options{Plan: plan, Profile: *profile, ID: *id, OutDir: *out, Self: self, Out: os.Stdout})
	if err != nil {
		return fmt.Errorf("writing the run record: %w", err)
	}
	switch rec.ExitCode {
	case runner.ExitComplete:
		return nil
	case runner.ExitCancelled:
		return &exitError{code: rec.ExitCode, err: errors.New("stopped by a signal; the record is saved")}
	default:
		return &exitError{code: rec.ExitCode, err: fmt.Errorf("incomplete: %d problem(s), see %s/report.md", len(rec.Problems), *out)}
	}
}

// readPlan reads and validates a plan file; unknown fields are errors, so
// a misspelt phase does not silently take its default.
func readPlan(path string) (bench.Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return bench.Plan{}, fmt.Errorf("plan: %w", err)
	}
	var p bench.Plan
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return bench.Plan{}, fmt.Errorf("plan %s: %w", path, err)
	}
	if err := p.Validate(); err != nil {
		return bench.Plan{}, fmt.Errorf("plan %s: %w", path, err)
	}
	return p, nil
}
