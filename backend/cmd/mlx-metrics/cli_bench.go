package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/benchapi"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
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
	fs := flag.NewFlagSet("bench forget", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	server := fs.String("server", defaultServer(), "backend URL (env MLX_METRICS_SERVER)")
	token := fs.String("token", os.Getenv("MLX_METRICS_TOKEN"), "bearer token the backend requires of changes (env MLX_METRICS_TOKEN)")
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "usage: mlx-metrics bench forget [--server URL] [--token T] ID\n\n"+
			"Removes one finished run from the backend's history, readable or not (as listed under\n"+
			"problems by `bench list`). Its run directory, if any, is left on disk.\n\nflags:")
		fs.PrintDefaults()
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("want exactly one run ID, got %d arguments", len(pos))
	}
	c, err := newAPIClient(*server)
	if err != nil {
		return err
	}
	header := http.Header{}
	if *token != "" {
		header.Set("Authorization", "Bearer "+*token)
	}
	if err := c.do(ctx, http.MethodDelete, "/history/"+url.PathEscape(pos[0]), header, nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "forgot run %s\n", pos[0])
	return nil
}

// printProblems tells, on stderr, which history entries a listing skipped.
func printProblems(w io.Writer, problems []bench.HistoryProblem) {
	for _, p := range problems {
		fmt.Fprintf(w, "skipped run %s: %s\n", p.ID, p.Message)
	}
	if len(problems) > 0 {
		fmt.Fprintf(w, "%d unreadable history entries skipped; remove one with `mlx-metrics bench forget ID`\n", len(problems))
	}
}

func benchListCmd(ctx context.Context, args []string, env cliEnv) error {
	fs := flag.NewFlagSet("bench list", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	server := fs.String("server", defaultServer(), "backend URL (env MLX_METRICS_SERVER)")
	limit := fs.Int("limit", 20, fmt.Sprintf("runs to list, newest first (at most %d)", benchapi.MaxHistoryLimit))
	asJSON := fs.Bool("json", false, "print the history JSON")
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "usage: mlx-metrics bench list [--server URL] [--limit N] [--json]\n\nLists finished bench-serve runs, newest first.\n\nflags:")
		fs.PrintDefaults()
	}
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
	c, err := newAPIClient(*server)
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := c.get(ctx, fmt.Sprintf("/history?limit=%d", *limit), &raw); err != nil {
		return err
	}
	if *asJSON {
		return printIndented(env.stdout, raw)
	}
	var list bench.HistoryList
	if err := json.Unmarshal(raw, &list); err != nil {
		return fmt.Errorf("unreadable history: %w", err)
	}
	printProblems(env.stderr, list.Problems)
	if len(list.Entries) == 0 {
		fmt.Fprintln(env.stdout, "no finished runs yet (start one with POST /api/metrics/bench or `mlx-metrics bench run`)")
		return nil
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPROFILE\tSTARTED\tDURATION\tCELLS\tRESULT")
	for _, e := range list.Entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", e.ID, e.Profile,
			time.UnixMilli(e.StartedAt).UTC().Format("2006-01-02 15:04:05Z"),
			(time.Duration(e.DurationMs) * time.Millisecond).Round(time.Second), len(e.Cells), result(e))
	}
	return tw.Flush()
}

func result(e bench.HistoryEntry) string {
	s := "complete"
	if !e.Complete {
		s = fmt.Sprintf("incomplete (exit %d)", e.ExitCode)
	}
	if n := len(e.Problems); n > 0 {
		s += fmt.Sprintf(", %d problems", n)
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

// fetchEntry gets one history entry, raw and decoded.
func fetchEntry(ctx context.Context, c *apiClient, id string) (json.RawMessage, bench.HistoryEntry, error) {
	var raw json.RawMessage
	var e bench.HistoryEntry
	if err := c.get(ctx, "/history/"+url.PathEscape(id), &raw); err != nil {
		return nil, e, err
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, e, fmt.Errorf("unreadable run %s: %w", id, err)
	}
	return raw, e, nil
}

func benchShowCmd(ctx context.Context, args []string, env cliEnv) error {
	fs := flag.NewFlagSet("bench show", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	server := fs.String("server", defaultServer(), "backend URL (env MLX_METRICS_SERVER)")
	asJSON := fs.Bool("json", false, "print the run's history entry as JSON (for export)")
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "usage: mlx-metrics bench show [--server URL] [--json] ID\n\nShows one finished run's per-cell medians.\n\nflags:")
		fs.PrintDefaults()
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("want exactly one run ID, got %d arguments", len(pos))
	}
	c, err := newAPIClient(*server)
	if err != nil {
		return err
	}
	raw, e, err := fetchEntry(ctx, c, pos[0])
	if err != nil {
		return err
	}
	if *asJSON {
		return printIndented(env.stdout, raw)
	}
	return printBenchEntry(env.stdout, e)
}

// printBenchEntry prints a run's summary and per-cell medians; `bench run`
// ends with it too.
func printBenchEntry(w io.Writer, e bench.HistoryEntry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "run\t%s\nprofile\t%s (%s)\nstarted\t%s\nduration\t%s\nresult\t%s\nmachine\t%s, %s, %s\n",
		e.ID, e.Profile, e.Scope, time.UnixMilli(e.StartedAt).UTC().Format(time.RFC3339),
		(time.Duration(e.DurationMs) * time.Millisecond).Round(time.Second), result(e),
		e.Machine.Chip, e.Machine.OS, orDash(e.Machine.GPU))
	if e.RunDirectory != "" {
		fmt.Fprintf(tw, "record\t%s\n", e.RunDirectory)
	}
	for _, p := range e.Problems {
		fmt.Fprintf(tw, "problem\t%s\n", p)
	}
	fmt.Fprint(tw, "\nCELL\tSTATUS")
	for _, f := range figures {
		fmt.Fprintf(tw, "\t%s", f.title)
	}
	fmt.Fprintln(tw)
	for _, cell := range e.Cells {
		fmt.Fprintf(tw, "%s\t%s", cell.Key, cell.Status)
		for _, f := range figures {
			fmt.Fprintf(tw, "\t%s", fmtFigure(f.get(cell)))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

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

// figure is one compact median; higherBetter says which way is faster.
// A memory figure is judged less or more, and not in the speed verdict.
type figure struct {
	title        string
	higherBetter bool
	get          func(bench.CompactCell) *float64
	memory       bool
}

var figures = []figure{
	{"DECODE tok/s", true, func(c bench.CompactCell) *float64 { return c.DecodeTokensPerSecond }, false},
	{"TTFT cold ms", false, func(c bench.CompactCell) *float64 { return c.TTFTColdMs }, false},
	{"PREFILL 1k tok/s", true, func(c bench.CompactCell) *float64 { return c.Prefill1kTokensPerSecond }, false},
	{"CONTEXT PREFILL tok/s", true, func(c bench.CompactCell) *float64 { return c.ContextPrefillTokensPerSecond }, false},
	{"AGGREGATE tok/s", true, func(c bench.CompactCell) *float64 { return c.AggregateTokensPerSecond }, false},
	{"COLD START ms", false, func(c bench.CompactCell) *float64 { return c.ColdStartMs }, false},
	{"PEAK RSS MB", false, func(c bench.CompactCell) *float64 { return c.PeakRssMB }, true},
}

// Verdicts.
const (
	verdictFaster = "faster"
	verdictSlower = "slower"
	verdictSame   = "same"
	verdictMixed  = "mixed"
	verdictLess   = "less" // memory
	verdictMore   = "more" // memory
)

// judge says whether b is faster than a for a figure, given the threshold
// as a fraction (0.05 is 5 %). The ratio is b over a.
func judge(f figure, a, b, threshold float64) (ratio float64, verdict string) {
	if a == 0 {
		return math.NaN(), verdictSame
	}
	ratio = b / a
	better := ratio > 1+threshold
	worse := ratio < 1-threshold
	if !f.higherBetter {
		better, worse = ratio < 1-threshold, ratio > 1+threshold
	}
	switch {
	case better && f.memory:
		return ratio, verdictLess
	case worse && f.memory:
		return ratio, verdictMore
	case better:
		return ratio, verdictFaster
	case worse:
		return ratio, verdictSlower
	}
	return ratio, verdictSame
}

// combine is the verdict over several.
func combine(vs []string) string {
	faster, slower := false, false
	for _, v := range vs {
		switch v {
		case verdictFaster:
			faster = true
		case verdictSlower:
			slower = true
		case verdictMixed:
			faster, slower = true, true
		}
	}
	switch {
	case faster && slower:
		return verdictMixed
	case faster:
		return verdictFaster
	case slower:
		return verdictSlower
	}
	return verdictSame
}

func benchCompareCmd(ctx context.Context, args []string, env cliEnv) error {
	fs := flag.NewFlagSet("bench compare", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	server := fs.String("server", defaultServer(), "backend URL (env MLX_METRICS_SERVER)")
	threshold := fs.Float64("threshold", 0.05, "a change within this fraction is the same (0.05 = 5%)")
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "usage: mlx-metrics bench compare [--server URL] [--threshold F] A B\n\n"+
			"Compares run B against run A cell by cell: each figure's ratio B/A and a verdict\n"+
			"(faster, slower, same; mixed when figures disagree). For times and memory lower is\n"+
			"better, for rates higher.\n\nflags:")
		fs.PrintDefaults()
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageErr("want two run IDs, A and B, got %d arguments", len(pos))
	}
	if !(*threshold >= 0 && *threshold < 1) {
		return usageErr("--threshold must be from 0 to below 1, got %v", *threshold)
	}
	c, err := newAPIClient(*server)
	if err != nil {
		return err
	}
	_, a, err := fetchEntry(ctx, c, pos[0])
	if err != nil {
		return err
	}
	_, b, err := fetchEntry(ctx, c, pos[1])
	if err != nil {
		return err
	}
	printComparison(env.stdout, a, b, *threshold)
	return nil
}

func printComparison(w io.Writer, a, b bench.HistoryEntry, threshold float64) {
	fmt.Fprintf(w, "A %s (%s)\nB %s (%s)\nratios are B/A; changes within %.1f%% are the same\n\n",
		a.ID, a.Profile, b.ID, b.Profile, 100*threshold)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CELL\tFIGURE\tA\tB\tB/A\tVERDICT")
	inB := map[string]bench.CompactCell{}
	for _, cell := range b.Cells {
		inB[cell.Key] = cell
	}
	var overall []string
	seen := map[string]bool{}
	for _, ca := range a.Cells {
		seen[ca.Key] = true
		cb, ok := inB[ca.Key]
		if !ok {
			fmt.Fprintf(tw, "%s\t\t\t\t\tonly in A\n", ca.Key)
			continue
		}
		var verdicts []string
		for _, f := range figures {
			va, vb := f.get(ca), f.get(cb)
			if va == nil || vb == nil {
				continue
			}
			ratio, v := judge(f, *va, *vb, threshold)
			verdicts = append(verdicts, v)
			fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t%.3f\t%s\n", ca.Key, f.title, *va, *vb, ratio, v)
		}
		if len(verdicts) == 0 {
			fmt.Fprintf(tw, "%s\t\t\t\t\tnothing measured in both\n", ca.Key)
			continue
		}
		v := combine(verdicts)
		overall = append(overall, v)
		fmt.Fprintf(tw, "%s\t(cell)\t\t\t\t%s\n", ca.Key, strings.ToUpper(v))
	}
	for _, cb := range b.Cells {
		if !seen[cb.Key] {
			fmt.Fprintf(tw, "%s\t\t\t\t\tonly in B\n", cb.Key)
		}
	}
	tw.Flush()
	if len(overall) == 0 {
		fmt.Fprintln(w, "\nverdict: no cell measured in both runs")
		return
	}
	v := combine(overall)
	fmt.Fprintf(w, "\nverdict: %s (%s)\n", v, map[string]string{
		verdictFaster: "B is faster than A",
		verdictSlower: "B is slower than A",
		verdictSame:   "B and A are the same within the threshold",
		verdictMixed:  "B is faster than A in some figures and slower in others",
	}[v])
}
