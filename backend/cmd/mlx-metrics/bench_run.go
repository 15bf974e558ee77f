package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/history"
	"github.com/mlx-bun/mlx-metrics/backend/internal/homelock"
	"github.com/mlx-bun/mlx-metrics/gpu/runner"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/plural"
	"github.com/mlx-bun/mlx-metrics/shared/strictjson"
)

func runBenchRun(ctx context.Context, args []string) error {
	surviveSupervisorLoss()
	return benchRunCmd(ctx, args, osEnv())
}

// benchRunCmd is `mlx-metrics bench run`: the runner process the backend's
// job service starts (isolation: task), also usable by hand. It ends with
// the cells' medians (as `bench show` prints them) and the report's path.
// Exit status: 0 every applicable cell measured, 1 incomplete (a failed
// cell, an unstable one under --strict, or a record that could not be
// saved), 2 usage or plan error, 143 stopped by SIGTERM (the record is
// written in every case but 2 and a failed save).
func benchRunCmd(ctx context.Context, args []string, env cliEnv) (err error) {
	fs := flag.NewFlagSet("bench run", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	planPath := fs.String("plan", "", "plan `FILE` (JSON, as mlx-metrics bench plan writes it); or give FILE as the one argument")
	out := fs.String("out", "", "run `DIR`: run.json, report.md, logs/ (default <home>/metrics/bench/runs/<id>)")
	home := fs.String("home", "", "record into the history of serve's home `DIR`, so the run shows in bench list and the panel (default MLX_METRICS_HOME or ~/.mlx-metrics, as serve's; not used with --out alone)")
	id := fs.String("id", "", "run `ID` (default: from the start time)")
	profile := fs.String("profile", "", "profile `NAME` the plan came from, for the record")
	strict := fs.Bool("strict", false, "an unstable cell (decode runs spread over the plan's unstableSpread) fails, so the run exits 1")
	fs.Usage = func() {
		fmt.Fprint(env.stderr, `usage: mlx-metrics bench run [--out DIR] [--home DIR] [--id ID] [--profile NAME] [--strict] [--plan] FILE

Runs a bench-serve plan: for each cell it starts the server (or attaches to
a running one), measures it, and writes run.json, report.md and logs/. It
ends with the cells' medians and the path of report.md.

Where the run goes: with --out only, to DIR and nowhere else; otherwise into
the history of serve's home (--home, else MLX_METRICS_HOME, else
~/.mlx-metrics, as serve's default), under <home>/metrics/bench/runs/<id>
unless --out says otherwise, so bench list and the panel show it. scripts/run
keeps its home in the checkout: --home .mlx-metrics from the checkout's root.

Exit status: 0 complete, 1 incomplete (a failed cell, an unstable one with
--strict, or a record that could not be saved), 2 usage or plan error,
143 stopped by SIGTERM.

Examples:
  mlx-metrics bench plan --decode-runs 2 --decode-tokens 64 --long-context-tokens -1 > plan.json
  mlx-metrics bench run --plan plan.json
  mlx-metrics bench run plan.json --out runs/quick-1
  mlx-metrics bench run --plan ~/.mlx-metrics/metrics/bench/plans/smoke.json --home ~/.mlx-metrics --strict

flags:
`)
		fs.PrintDefaults()
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 1 || len(pos) == 1 && *planPath != "":
		return usageErr("unexpected argument %q (bench run takes one plan FILE, as --plan or alone)", pos[len(pos)-1])
	case len(pos) == 1:
		*planPath = pos[0]
	case *planPath == "":
		return usageErr("--plan is required: the plan FILE to run (mlx-metrics bench plan writes one)")
	}
	if *out == "" && *home == "" {
		*home = envOr("MLX_METRICS_HOME", defaultHome()) // serve's, so the panel shows the run
	}
	if *id != "" && !history.IDPattern.MatchString(*id) {
		return usageErr("--id %q: want letters, digits, '.', '_' or '-' (at most 128, not starting with a punctuation mark)", *id)
	}
	plan, err := readPlan(*planPath)
	if err != nil {
		return &exitError{code: runner.ExitUsage, err: err}
	}
	self, err := os.Executable()
	if err != nil {
		return &exitError{code: runner.ExitUsage, err: fmt.Errorf("finding this executable for {self}: %w", err)}
	}
	if *id == "" {
		*id = bench.NewRunID(time.Now(), randomSuffix())
	}
	dir := *out
	if dir == "" {
		// Mkdir, not MkdirAll, for the run's own directory: it is never
		// another run's (or a backend job's).
		runs := filepath.Join(*home, "metrics", "bench", "runs")
		dir = filepath.Join(runs, *id)
		if err := os.MkdirAll(runs, 0o755); err != nil {
			return err
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			return fmt.Errorf("run directory: %w", err)
		}
	}
	runOut := openRunLog(dir, env)
	defer func() { runOut.close(err) }()
	rec, err := runner.Run(ctx, runner.Options{Plan: plan, Profile: *profile, ID: *id, OutDir: dir, Self: self, Out: runOut, Strict: *strict})
	if err != nil {
		// The backend's job keeps the runner's last stderr line as the
		// reason: this one ("... save run.json: no space left on device").
		return err
	}
	entry := bench.Compact(rec, dir)
	fmt.Fprintln(runOut)
	if err := printBenchEntry(runOut, oneLineProblems(entry)); err != nil {
		return err
	}
	fmt.Fprintf(runOut, "\nreport: %s\n", filepath.Join(dir, "report.md"))
	var histErr error
	if *home != "" {
		histErr = keepInHistory(*home, entry, runOut)
	}
	switch {
	case rec.ExitCode == runner.ExitCancelled:
		return &exitError{code: rec.ExitCode, err: errors.New("stopped by a signal; the record is saved")}
	case rec.ExitCode != runner.ExitComplete:
		return &exitError{code: rec.ExitCode, err: fmt.Errorf("incomplete: %s, see %s", problems(len(rec.Problems)), filepath.Join(dir, "report.md"))}
	case histErr != nil:
		return &exitError{code: runner.ExitIncomplete, err: histErr}
	}
	return nil
}

// keepInHistory puts the run's entry into home's history, as serve does
// for the runs it starts. While serve runs on that home it holds the
// history (one process at a time): the command that imports the run
// through serve is said, and it is not a failure of the run.
func keepInHistory(home string, e bench.HistoryEntry, w io.Writer) error {
	lock, err := homelock.Acquire(home, "bench run")
	var inUse *homelock.InUseError
	if errors.As(err, &inUse) {
		fmt.Fprintf(w, "history: %s is held by %s; keep the run in its history with\n  mlx-metrics bench import %s\n(--server URL when serve is not on %s)\n", home, inUse.Holder(), e.RunDirectory, defaultServer())
		return nil
	}
	defer lock.Release() // nil when the lock could not be taken: Badger's own lock still guards
	h, err := history.Open(filepath.Join(home, "metrics", "history"), history.Options{})
	if err != nil && historyHeld(err) {
		fmt.Fprintf(w, "history: serve is running on %s and holds its history; keep the run in it with\n  mlx-metrics bench import %s\n(--server URL when serve is not on %s)\n", home, e.RunDirectory, defaultServer())
		return nil
	}
	if err != nil {
		return fmt.Errorf("the run is saved in %s, but history could not keep it: %w", e.RunDirectory, err)
	}
	err = h.Put(e)
	if cerr := h.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("the run is saved in %s, but history could not keep it: %w", e.RunDirectory, err)
	}
	fmt.Fprintf(w, "history: kept as %s in %s (bench list, the panel)\n", e.ID, home)
	return nil
}

// oneLineProblems keeps each problem on its line in the summary: the
// backend reads the runner's stdout by lines, and a problem quotes what a
// server said.
func oneLineProblems(e bench.HistoryEntry) bench.HistoryEntry {
	ps := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		ps[i] = strings.Join(strings.FieldsFunc(p, func(r rune) bool { return r == '\n' || r == '\r' }), " | ")
	}
	e.Problems = ps
	return e
}

// historyHeld tells Badger's "another process holds the directory lock",
// which it reports as text only (its error wraps no errno).
func historyHeld(err error) bool {
	return strings.Contains(err.Error(), "Another process is using this Badger database")
}

func problems(n int) string { return plural.Count(n, "problem", "problems") }

// randomSuffix keeps runs started in the same second apart, as the job
// service's ids do.
func randomSuffix() string {
	b := make([]byte, 3)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// readPlan reads and validates a plan file; unknown fields are errors, so
// a misspelt phase does not silently take its default.
func readPlan(path string) (bench.Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return bench.Plan{}, fmt.Errorf("plan: %w", err)
	}
	var p bench.Plan
	switch err := strictjson.Decode(b, &p, true); {
	case errors.Is(err, strictjson.ErrEmpty):
		return bench.Plan{}, fmt.Errorf("plan %s: the file is empty; want a JSON plan (mlx-metrics bench plan writes one)", path)
	case errors.Is(err, strictjson.ErrTrailing):
		return bench.Plan{}, fmt.Errorf("plan %s: more follows the plan's JSON object; want one plan per file", path)
	case err != nil:
		return bench.Plan{}, fmt.Errorf("plan %s: %w", path, err)
	}
	if err := p.Validate(); err != nil {
		return bench.Plan{}, fmt.Errorf("plan %s: %w", path, err)
	}
	return p, nil
}
