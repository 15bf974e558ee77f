package runner

import (
	"fmt"
	"strings"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// Report renders report.md: a table of per-cell medians (bench.Compact's
// figures plus warm TTFT), then the problems and failures as a footer.
func Report(rec bench.RunRecord) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# bench-serve run %s\n\n", rec.ID)
	profile := rec.Profile
	if profile == "" {
		profile = "(plan file)"
	}
	status := "complete"
	switch {
	case rec.Cancelled:
		status = "cancelled"
	case !rec.Complete:
		status = "incomplete"
	}
	fmt.Fprintf(&b, "- profile: %s (scope %s)\n", profile, rec.Plan.Scope)
	fmt.Fprintf(&b, "- machine: %s, %s, %.1f GiB, %s; GPU: %s\n", rec.Machine.Host, rec.Machine.Chip, float64(rec.Machine.MemoryBytes)/(1<<30), rec.Machine.OS, orDash(rec.Machine.GPU))
	fmt.Fprintf(&b, "- started %s, took %s; %s (exit %d)\n\n",
		time.UnixMilli(rec.StartedAt).UTC().Format(time.RFC3339),
		(time.Duration(rec.FinishedAt-rec.StartedAt) * time.Millisecond).Round(time.Millisecond), status, rec.ExitCode)

	b.WriteString("Medians. Token counts come from the servers' usage.\n\n")
	b.WriteString("| cell | status | decode tok/s | TTFT cold ms | prefill ~1k tok/s | TTFT warm ms | long-context prefill tok/s | aggregate tok/s | cold start ms | peak RSS MB | peak GPU MB |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, c := range rec.Cells {
		cc := bench.CompactCellOf(c)
		st := c.Status
		if c.Unstable {
			st += " (unstable)"
		}
		gpu := "n/a"
		if c.PeakGPUMemoryBytes != nil {
			gpu = fmt.Sprintf("%.0f", float64(*c.PeakGPUMemoryBytes)/(1<<20))
		}
		cold, rss := num(cc.ColdStartMs, 0), num(cc.PeakRssMB, 0)
		if c.Attached {
			// Not applicable rather than not measured: the run did not start it.
			cold, rss = "n/a (attached)", "n/a"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			cc.Key, st, num(cc.DecodeTokensPerSecond, 1), num(cc.TTFTColdMs, 1), num(cc.Prefill1kTokensPerSecond, 0),
			num(warmTTFT(c), 1), num(cc.ContextPrefillTokensPerSecond, 0), num(cc.AggregateTokensPerSecond, 1),
			cold, rss, gpu)
	}

	var notes []string
	for _, c := range rec.Cells {
		if c.GPUMemoryNote != "" {
			notes = append(notes, "peak GPU memory "+c.GPUMemoryNote)
			break
		}
	}
	if len(rec.Problems) > 0 || hasFailure(rec) {
		b.WriteString("\n## Problems\n\n")
		for _, p := range rec.Problems {
			fmt.Fprintf(&b, "- %s\n", oneLine(p))
		}
		for _, c := range rec.Cells {
			if c.Status != bench.CellFailed {
				continue
			}
			fmt.Fprintf(&b, "\n### %s failed: %s\n", c.Key, orDash(c.Note))
			if t := strings.TrimSpace(c.StderrTail); t != "" {
				fmt.Fprintf(&b, "\nstderr tail:\n\n```\n%s\n```\n", lastLines(t, 20))
			}
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n" + strings.Join(notes, "\n") + "\n")
	}
	return b.String()
}

func hasFailure(rec bench.RunRecord) bool {
	for _, c := range rec.Cells {
		if c.Status == bench.CellFailed {
			return true
		}
	}
	return false
}

func warmTTFT(c bench.CellResult) *float64 {
	var xs []float64
	for _, s := range bench.PhaseSamples(c.Samples, bench.PhaseWarmTTFT) {
		if s.TTFTMs > 0 {
			xs = append(xs, s.TTFTMs)
		}
	}
	return bench.Median(xs)
}

func num(v *float64, prec int) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.*f", prec, *v)
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
