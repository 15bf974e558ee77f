package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mlx-bun/mlx-metrics/shared/bytesize"
	"github.com/mlx-bun/mlx-metrics/shared/duration"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

func runSnapshot(ctx context.Context, args []string) error {
	return snapshotCmd(ctx, args, osEnv())
}

func snapshotCmd(ctx context.Context, args []string, env cliEnv) error {
	fs, server, _ := clientFlags("snapshot", "usage: mlx-metrics snapshot [--server URL] [--json]\n\n"+
		"Prints the live metrics of a running backend as tables: models, schedulers,\n"+
		"caches, requests, their timing distributions (slow tail high) and rates (slow tail low).\n\n"+
		"examples:\n"+
		"  mlx-metrics snapshot\n"+
		"  mlx-metrics snapshot --server http://127.0.0.1:7878 --json | jq .requests.window", env, false)
	asJSON := fs.Bool("json", false, "print the snapshot JSON as the backend sent it")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("snapshot takes no arguments, got %q", pos)
	}
	c, err := newClient(*server, "")
	if err != nil {
		return err
	}
	if *asJSON {
		raw, err := c.SnapshotJSON(ctx)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(env.stdout, "%s\n", raw)
		return err
	}
	s, err := c.Snapshot(ctx)
	if err != nil {
		return err
	}
	return printSnapshot(env.stdout, s)
}

// printSnapshot writes s as a few aligned tables.
func printSnapshot(w io.Writer, s snapshot.Snapshot) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "snapshot at %s, version %d, up %s\n",
		time.UnixMilli(s.At).UTC().Format(time.RFC3339), s.Version, duration.Ms(float64(s.At-s.StartedAt)))

	fmt.Fprintln(tw, "\nMODEL\tSTATE\tLOADS\tLAST LOAD\tWEIGHTS\tKV\tPREFIX CACHE\tSWAPS")
	if len(s.Models) == 0 {
		fmt.Fprintln(tw, "(no models)")
	}
	for _, m := range s.Models {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d\n", termSafe(m.Model), m.State, m.Loads, msOrDash(m.LastLoadMs),
			bytesize.Format(m.WeightsBytes), bytesize.Format(m.KVBytes),
			bytesize.Format(m.PrefixCacheBytes), m.Swaps)
	}

	fmt.Fprintln(tw, "\nSCHEDULER\tACTIVE\tCAPACITY\tQUEUED\tTOK/S")
	if len(s.Schedulers) == 0 {
		fmt.Fprintln(tw, "(no samples)")
	}
	for _, sc := range s.Schedulers {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%.1f\n", termSafe(sc.Model), sc.Active, capacityOrDash(sc.Capacity), sc.Queued, sc.TokensPerSecond)
	}

	fmt.Fprintln(tw, "\nCACHE\tKIND\tUSED\tCAPACITY\tUSAGE\tHIT RATE")
	if len(s.Caches) == 0 {
		fmt.Fprintln(tw, "(no samples)")
	}
	for _, c := range snapshot.Readings(s.Caches) {
		used, capacity, usage := bytesize.Format(c.Bytes), "-", "-"
		if c.CapacityBytes != nil {
			capacity = bytesize.Format(*c.CapacityBytes)
			if *c.CapacityBytes > 0 {
				usage = fmt.Sprintf("%.1f%%", 100*float64(c.Bytes)/float64(*c.CapacityBytes))
			}
		}
		if c.UsageRatio != nil {
			usage = fmt.Sprintf("%.1f%%", 100**c.UsageRatio)
			if c.Bytes == 0 {
				used = "-" // a scraped engine reports the ratio, not bytes
			}
		}
		hit := "-"
		if c.HitRate != nil {
			hit = fmt.Sprintf("%.1f%%", 100**c.HitRate)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", termSafe(c.Model), c.Cache, used, capacity, usage, hit)
	}

	r := s.Requests
	fmt.Fprintf(tw, "\nREQUESTS\t%d finished", r.Finished)
	for _, k := range r.ByFinish.Keys() {
		fmt.Fprintf(tw, ", %s %d", termSafe(string(k)), r.ByFinish[k])
	}
	fmt.Fprintf(tw, "; last %d of window %d\n", r.Window.Count, r.Window.Size)
	// Times by their slow tail (high), rates by theirs (low), as the
	// panel's Requests view shows them.
	distributions(tw, "TIMING (ms)\tP50\tP95\tP99\tMAX\tMEAN",
		func(d *snapshot.Distribution) [5]float64 { return [5]float64{d.P50, d.P95, d.P99, d.Max, d.Mean} },
		[]distRow{{"queue", r.Window.QueueMs}, {"ttft", r.Window.TTFTMs}, {"total", r.Window.TotalMs}})
	distributions(tw, "RATE (tok/s)\tP50\tP5\tP1\tMIN\tMEAN",
		func(d *snapshot.Distribution) [5]float64 { return [5]float64{d.P50, d.P5, d.P1, d.Min, d.Mean} },
		[]distRow{{"prefill", r.Window.PrefillTokensPerSecond}, {"decode", r.Window.DecodeTokensPerSecond}})
	if r.Window.CachedPromptShare != nil {
		fmt.Fprintf(tw, "cached prompt share\t%.1f%%\n", 100**r.Window.CachedPromptShare)
	}
	return tw.Flush()
}

func msOrDash(v *float64) string {
	if v == nil {
		return "-"
	}
	return duration.Ms(*v)
}

// capacityOrDash shows 0 as unknown: scraped engines do not export it.
func capacityOrDash(c int) string {
	if c == 0 {
		return "-"
	}
	return fmt.Sprint(c)
}

// termLine is termSafe(s) cut to maxTermLine bytes: a message from a
// backend may be any size.
func termLine(s string) string {
	s = termSafe(s)
	if len(s) > maxTermLine {
		s = strings.ToValidUTF8(s[:maxTermLine], "") + "…"
	}
	return s
}

// maxTermLine bounds a message printed from elsewhere.
const maxTermLine = 2000

// termSafe escapes what a terminal would act on (control characters, ESC
// sequences, C1 controls, tabs that would break the table) and the bidi
// controls that would show text reversed, so a model name a producer chose
// cannot rewrite the operator's screen.
func termSafe(s string) string {
	clean := true
	for _, r := range s {
		if unicode.IsControl(r) || r == utf8.RuneError || unicode.Is(unicode.Bidi_Control, r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	q := strconv.QuoteToGraphic(s)
	return q[1 : len(q)-1]
}

// distRow is one distribution of the snapshot's tables.
type distRow struct {
	name string
	d    *snapshot.Distribution
}

// distributions writes a table of distributions under header, each row's
// five figures picked by cols; a distribution with no sample is dashes.
func distributions(w io.Writer, header string, cols func(*snapshot.Distribution) [5]float64, rows []distRow) {
	fmt.Fprintln(w, "\n"+header)
	for _, r := range rows {
		if r.d == nil {
			fmt.Fprintf(w, "%s\t-\t-\t-\t-\t-\n", r.name)
			continue
		}
		c := cols(r.d)
		fmt.Fprintf(w, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\n", r.name, c[0], c[1], c[2], c[3], c[4])
	}
}
