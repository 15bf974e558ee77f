package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/benchapi"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/duration"
	"github.com/mlx-bun/mlx-metrics/shared/plural"
)

// The history subcommands of `mlx-metrics bench`, over a running backend's
// /api/metrics/history routes.

func runBenchList(ctx context.Context, args []string) error {
	return benchListCmd(ctx, args, osEnv())
}

func runBenchShow(ctx context.Context, args []string) error {
	return benchShowCmd(ctx, args, osEnv())
}

func runBenchCompare(ctx context.Context, args []string) error {
	return benchCompareCmd(ctx, args, osEnv())
}

func runBenchForget(ctx context.Context, args []string) error {
	return benchForgetCmd(ctx, args, osEnv())
}

// benchForgetCmd removes one run from history (an unreadable one, or one
// not worth keeping); its run directory stays.
func benchForgetCmd(ctx context.Context, args []string, env cliEnv) error {
	fs, server, token := clientFlags("bench forget", "usage: mlx-metrics bench forget [--server URL] [--token TOKEN] ID\n\n"+
		"Removes one finished run from the backend's history, readable or not (as listed under\n"+
		"problems by `bench list`). Its run directory, if any, is left on disk.\n\n"+
		"example:\n  mlx-metrics bench forget 20261202T100000Z-bbbb", env, true)
	c, arg, err := oneArgClient(fs, server, token, args, "run ID")
	if err != nil {
		return err
	}
	if err := c.Forget(ctx, arg); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "forgot run %s\n", arg)
	return nil
}

// printProblems tells, on stderr, which history entries a listing skipped.
func printProblems(w io.Writer, problems []bench.HistoryProblem) {
	for _, p := range problems {
		fmt.Fprintf(w, "skipped run %s: %s\n", termSafe(p.ID), termSafe(p.Message))
	}
	if len(problems) > 0 {
		fmt.Fprintf(w, "%s skipped; remove one with `mlx-metrics bench forget ID`\n", plural.Count(len(problems), "unreadable history entry", "unreadable history entries"))
	}
}

func benchListCmd(ctx context.Context, args []string, env cliEnv) error {
	fs, server, _ := clientFlags("bench list", "usage: mlx-metrics bench list [--server URL] [--limit N] [--json]\n\n"+
		"Lists a running backend's finished bench-serve runs, newest first, with their result.\n\n"+
		"examples:\n  mlx-metrics bench list\n  mlx-metrics bench list --limit 5 --json | jq '.runs[].id'", env, false)
	limit := fs.Int("limit", 20, fmt.Sprintf("list the newest `N` runs (at most %d)", benchapi.MaxHistoryLimit))
	asJSON := fs.Bool("json", false, "print the history JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("bench list takes no arguments, got %q", pos)
	}
	if *limit < 1 || *limit > benchapi.MaxHistoryLimit {
		return usageErr("--limit must be from 1 to %d, got %d", benchapi.MaxHistoryLimit, *limit)
	}
	c, err := newClient(*server, "")
	if err != nil {
		return err
	}
	if *asJSON { // as the backend sent it, fields this build does not know included
		raw, err := c.HistoryJSON(ctx, *limit)
		if err != nil {
			return err
		}
		return printIndented(env.stdout, raw)
	}
	list, err := c.History(ctx, *limit)
	if err != nil {
		return err
	}
	printProblems(env.stderr, list.Problems)
	if len(list.Entries) == 0 {
		fmt.Fprintln(env.stdout, "no finished runs yet (start one with POST /api/metrics/bench or `mlx-metrics bench run`)")
		return nil
	}
	return printBenchList(env.stdout, list.Entries)
}

// printBenchList prints one line a run; what the history says is escaped
// for the terminal (termSafe), as everything the bench commands print of it.
func printBenchList(w io.Writer, entries []bench.HistoryEntry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPROFILE\tSTARTED\tDURATION\tCELLS\tRESULT")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", termSafe(e.ID), termSafe(e.Profile),
			time.UnixMilli(e.StartedAt).UTC().Format("2006-01-02 15:04:05Z"),
			duration.Ms(float64(e.DurationMs)), len(e.Cells), result(e))
	}
	return tw.Flush()
}

func result(e bench.HistoryEntry) string {
	s := "complete"
	if !e.Complete {
		s = fmt.Sprintf("incomplete (exit %d)", e.ExitCode)
	}
	if n := len(e.Problems); n > 0 {
		s += ", " + problems(n)
	}
	return s
}

func printIndented(w io.Writer, raw []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

func benchShowCmd(ctx context.Context, args []string, env cliEnv) error {
	fs, server, token := clientFlags("bench show", "usage: mlx-metrics bench show [--server URL] [--json] ID\n\n"+
		"Shows one finished run: its result, problems and per-cell medians.\n\n"+
		"examples:\n  mlx-metrics bench show 20261202T100000Z-bbbb\n  mlx-metrics bench show --json 20261202T100000Z-bbbb > run.json", env, false)
	asJSON := fs.Bool("json", false, "print the run's history entry as JSON (for export)")
	c, arg, err := oneArgClient(fs, server, token, args, "run ID")
	if err != nil {
		return err
	}
	if *asJSON { // as the backend sent it: an export loses nothing a newer backend keeps
		raw, err := c.HistoryEntryJSON(ctx, arg)
		if err != nil {
			return err
		}
		return printIndented(env.stdout, raw)
	}
	e, err := c.HistoryEntry(ctx, arg)
	if err != nil {
		return err
	}
	return printBenchEntry(env.stdout, e)
}

// printBenchEntry prints a run's summary and per-cell medians, escaped for
// the terminal; `bench run` ends with it too.
func printBenchEntry(w io.Writer, e bench.HistoryEntry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "run\t%s\nprofile\t%s (%s)\nstarted\t%s\nduration\t%s\nresult\t%s\nmachine\t%s, %s, %s\n",
		termSafe(e.ID), orDash(termSafe(e.Profile)), termSafe(e.Scope), time.UnixMilli(e.StartedAt).UTC().Format(time.RFC3339),
		duration.Ms(float64(e.DurationMs)), result(e),
		termSafe(e.Machine.Chip), termSafe(e.Machine.OS), termSafe(orDash(e.Machine.GPU)))
	if e.RunDirectory != "" {
		fmt.Fprintf(tw, "record\t%s\n", termSafe(e.RunDirectory))
	}
	for _, p := range e.Problems {
		fmt.Fprintf(tw, "problem\t%s\n", termSafe(p))
	}
	fmt.Fprint(tw, "\nCELL\tSTATUS")
	for _, f := range bench.Figures {
		fmt.Fprintf(tw, "\t%s", figureTitle(f))
	}
	fmt.Fprintln(tw)
	for _, cell := range e.Cells {
		fmt.Fprintf(tw, "%s\t%s", termSafe(cell.Key), termSafe(string(cell.Status)))
		for _, f := range bench.Figures {
			if f.Key == "cold_start" && cell.Attached {
				fmt.Fprint(tw, "\tn/a")
				continue
			}
			fmt.Fprintf(tw, "\t%s", fmtFigure(f.Get(cell)))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := printHeadToHeads(w, e.Cells); err != nil {
		return err
	}
	for _, cell := range e.Cells {
		if len(cell.LoadPoints) > 0 {
			fmt.Fprintf(w, "\nload: %s (times in ms)\n", termSafe(cell.Key))
			table := strings.TrimSuffix(bench.LoadTable(cell.LoadPoints, cell.MaxRate), "\n")
			for _, line := range strings.Split(table, "\n") {
				fmt.Fprintln(w, termSafe(line))
			}
		}
	}
	return nil
}

// printHeadToHeads prints each candidate's figures beside its model's
// reference cell's (bench.HeadToHeads), the compare rule's verdicts after.
func printHeadToHeads(w io.Writer, cells []bench.CompactCell) error {
	for _, h := range bench.HeadToHeads(cells, bench.HeadToHeadThreshold) {
		fmt.Fprintf(w, "\nhead to head: %s against %s: %s; parity: %s\n", termSafe(h.CandidateCell.Key), termSafe(h.ReferenceCell.Key),
			strings.ToUpper(h.Verdict), termSafe(bench.ParityWord(h.Parity)))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "FIGURE\tCANDIDATE\tREFERENCE\tCANDIDATE/REFERENCE\tVERDICT")
		for _, f := range h.Figures {
			v := f.Verdict
			if f.Why != "" {
				v += " (" + f.Why + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%s\n", figureTitle(f.Figure), fmtFigure(&f.Candidate), fmtFigure(&f.Reference), f.Candidate/f.Reference, v)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// figureTitle is a figure's column heading: "DECODE tok/s".
func figureTitle(f bench.Figure) string { return strings.ToUpper(f.Name) + " " + f.Unit }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func fmtFigure(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *v)
}

func benchCompareCmd(ctx context.Context, args []string, env cliEnv) error {
	fs, server, _ := clientFlags("bench compare", "usage: mlx-metrics bench compare [--server URL] [--threshold PCT] [--fail-on-regression PCT] A B\n\n"+
		"Compares run B against run A cell by cell: each figure's medians with their spread, the\n"+
		"change and a verdict (faster, slower, same; mixed when figures disagree). For times and\n"+
		"memory lower is better, for rates higher. The rule: "+bench.CompareRule+".\n"+
		"Noise floors (one sample a side; docs/bench-serve.md says how they were measured): "+noiseFloors()+".\n"+
		"Exits 0 whatever the verdict, unless --fail-on-regression is given.\n\n"+
		"examples:\n"+
		"  mlx-metrics bench compare 20261201T100000Z-aaaa 20261202T100000Z-bbbb\n"+
		"  mlx-metrics bench compare --fail-on-regression 10 $BASE $CANDIDATE   # in CI", env, false)
	threshold := fs.Float64("threshold", 5, "a change within `PCT` percent is the same (below 1: a fraction, deprecated)")
	failOn := fs.Float64("fail-on-regression", 0, "exit 1 when a figure of B is worse than A's (slower, or more memory) by over `PCT` percent and the change counts (0: never)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageErr("want two run IDs, A and B, got %s", plural.Count(len(pos), "argument", "arguments"))
	}
	if !(*threshold >= 0 && *threshold < 100) {
		return usageErr("--threshold must be a percentage from 0 to below 100, got %v", *threshold)
	}
	if *threshold > 0 && *threshold < 1 { // the old unit: kept working, said once
		fmt.Fprintf(env.stderr, "note: --threshold %g read as a fraction (%g%%); it takes a percent now, as --fail-on-regression: write --threshold %g\n", *threshold, 100**threshold, 100**threshold)
		*threshold *= 100
	}
	c, err := newClient(*server, "")
	if err != nil {
		return err
	}
	a, err := c.HistoryEntry(ctx, pos[0])
	if err != nil {
		return err
	}
	b, err := c.HistoryEntry(ctx, pos[1])
	if err != nil {
		return err
	}
	if !(*failOn >= 0) {
		return usageErr("--fail-on-regression must be a percentage >= 0, got %v", *failOn)
	}
	regressions := printComparison(env.stdout, a, b, *threshold/100, *failOn/100)
	if *failOn > 0 && regressions > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%s over %g%%", plural.Count(regressions, "regression", "regressions"), *failOn)}
	}
	return nil
}

// printComparison writes the comparison of b against a and returns how
// many figures regressed by more than regression (a fraction; 0: none
// counted).
func printComparison(w io.Writer, a, b bench.HistoryEntry, threshold, regression float64) (regressions int) {
	fmt.Fprintf(w, "A %s (profile %s, on %s)\nB %s (profile %s, on %s)\nchanges are (B-A)/A; %s (threshold %.1f%%)\n\n",
		termSafe(a.ID), orDash(termSafe(a.Profile)), ranOn(a.Machine), termSafe(b.ID), orDash(termSafe(b.Profile)), ranOn(b.Machine),
		bench.CompareRule, 100*threshold)
	if a.Machine.Host != b.Machine.Host || a.Machine.Chip != b.Machine.Chip {
		fmt.Fprintln(w, "the runs are of different machines: a change is theirs as much as the server's")
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CELL\tFIGURE\tA\tB\tCHANGE\tVERDICT")
	inB := map[string]bench.CompactCell{}
	for _, cell := range b.Cells {
		inB[cell.Key] = cell
	}
	var overall []string
	seen := map[string]bool{}
	for _, ca := range a.Cells {
		seen[ca.Key] = true
		key := termSafe(ca.Key)
		cb, ok := inB[ca.Key]
		if !ok {
			fmt.Fprintf(tw, "%s\t\t\t\t\tonly in A\n", key)
			continue
		}
		var verdicts []string
		for _, f := range bench.Figures {
			va, vb := f.Get(ca), f.Get(cb)
			if va == nil || vb == nil {
				continue
			}
			ra, okA := f.Spread(ca)
			rb, okB := f.Spread(cb)
			var pa, pb *bench.Range
			if okA && okB {
				pa, pb = &ra, &rb
			}
			j := bench.Judge(f, *va, *vb, pa, pb, threshold)
			verdicts = append(verdicts, j.Verdict)
			if regressed(j, regression) {
				regressions++
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", key, figureTitle(f), withSpread(*va, ra, okA), withSpread(*vb, rb, okB), pct(j.Change), verdictText(j))
		}
		loadVerdicts, loadRegressions := compareLoad(tw, key, ca, cb, threshold, regression)
		verdicts = append(verdicts, loadVerdicts...)
		regressions += loadRegressions
		if len(verdicts) == 0 {
			fmt.Fprintf(tw, "%s\t\t\t\t\tnothing measured in both\n", key)
			continue
		}
		v := bench.Combine(verdicts)
		overall = append(overall, v)
		fmt.Fprintf(tw, "%s\t(cell)\t\t\t\t%s\n", key, strings.ToUpper(v))
	}
	for _, cb := range b.Cells {
		if !seen[cb.Key] {
			fmt.Fprintf(tw, "%s\t\t\t\t\tonly in B\n", termSafe(cb.Key))
		}
	}
	tw.Flush()
	if hasLoad(a) && hasLoad(b) {
		fmt.Fprintf(w, "\nload points: %s\n", bench.LoadCompareRule)
	}
	if len(overall) == 0 {
		fmt.Fprintln(w, "\nverdict: no cell measured in both runs")
		return regressions
	}
	v := bench.Combine(overall)
	fmt.Fprintf(w, "\nverdict: %s (%s)\n", v, map[string]string{
		bench.VerdictFaster: "B is faster than A",
		bench.VerdictSlower: "B is slower than A",
		bench.VerdictSame:   "B and A are the same by the rule above",
		bench.VerdictMixed:  "B is faster than A in some figures and slower in others",
	}[v])
	return regressions
}

// regressed says j counts against --fail-on-regression (a fraction; 0:
// never): slower, or more memory, by over it.
func regressed(j bench.Judgement, regression float64) bool {
	return (j.Verdict == bench.VerdictSlower || j.Verdict == bench.VerdictMore) && regression > 0 && math.Abs(j.Change) > regression
}

// verdictText is j's verdict with why a change past the threshold is the
// same: "same (inside the spread)".
func verdictText(j bench.Judgement) string {
	if j.Why == "" {
		return j.Verdict
	}
	return j.Verdict + " (" + j.Why + ")"
}

// noiseFloors lists each figure's floor for the usage: "decode x1.1, ...".
func noiseFloors() string {
	var fs []string
	for _, f := range bench.Figures {
		fs = append(fs, f.Name+" "+f.NoiseFloor())
	}
	return strings.Join(fs, ", ")
}

// withSpread is a median with its samples' spread when kept: "100.0
// (95.0-105.0)".
func withSpread(v float64, r bench.Range, ok bool) string {
	if !ok || r.Min == r.Max {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.1f (%.1f-%.1f)", v, r.Min, r.Max)
}

func pct(change float64) string {
	if math.IsNaN(change) {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", 100*change)
}

// ranOn names the machine a run ran on: its host and chip.
func ranOn(m bench.Machine) string {
	switch {
	case m.Host == "" && m.Chip == "":
		return "an unknown machine"
	case m.Chip == "":
		return termSafe(m.Host)
	case m.Host == "":
		return termSafe(m.Chip)
	}
	return termSafe(m.Host) + ", " + termSafe(m.Chip)
}
