package runner

import (
	"fmt"
	"strings"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/bytesize"
	"github.com/mlx-bun/mlx-metrics/shared/duration"
)

// Report renders report.md: a table of per-cell medians (bench.Figures,
// the figures every view of a run shows, plus peak GPU memory), then the
// problems and failures as a footer.
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
	fmt.Fprintf(&b, "- machine: %s, %s, %s, %s; GPU: %s\n", rec.Machine.Host, rec.Machine.Chip, bytesize.Format(rec.Machine.MemoryBytes), rec.Machine.OS, orDash(rec.Machine.GPU))
	fmt.Fprintf(&b, "- started %s, took %s; %s (exit %d)\n",
		time.UnixMilli(rec.StartedAt).UTC().Format(time.RFC3339),
		duration.Ms(float64(rec.FinishedAt-rec.StartedAt)), status, rec.ExitCode)
	if t := timing(rec); t != "" {
		fmt.Fprintf(&b, "- timing: %s\n", t)
	}
	b.WriteString("\n")

	b.WriteString("Medians. Token counts come from the servers' usage.\n\n| cell | status")
	for _, f := range bench.Figures {
		fmt.Fprintf(&b, " | %s %s", f.Name, f.Unit)
	}
	b.WriteString(" | peak GPU MiB |\n|---|---" + strings.Repeat("|--:", len(bench.Figures)+1) + "|\n")
	for _, c := range rec.Cells {
		cc := bench.CompactCellOf(c)
		st := c.Status
		if c.Unstable {
			st += " (unstable)"
		}
		fmt.Fprintf(&b, "| %s | %s", cc.Key, st)
		for _, f := range bench.Figures {
			fmt.Fprintf(&b, " | %s", figure(f, cc))
		}
		gpu := "n/a"
		if c.PeakGPUMemoryBytes != nil {
			gpu = fmt.Sprintf("%.0f", float64(*c.PeakGPUMemoryBytes)/(1<<20))
		}
		fmt.Fprintf(&b, " | %s |\n", gpu)
	}

	b.WriteString(headToHead(rec))

	for _, c := range rec.Cells {
		if len(c.LoadPoints) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n## Load: %s\n\n%s\n%s", c.Key, loadSetting(rec.Plan.Phases.Load), bench.LoadTable(c.LoadPoints, c.MaxRate))
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

// loadSetting is the load phase's workload and SLO, in a line.
func loadSetting(l *bench.Load) string {
	if l == nil {
		return ""
	}
	d := l.Defaults()
	s := fmt.Sprintf("Workload %s, input %s, output %s tokens, %s", d.Workload.Kind, lengths(d.Workload.Input), lengths(d.Workload.Output), d.Endpoint)
	if d.Arrival != "" {
		s += ", " + d.Arrival + " arrivals"
	}
	if g := d.Goodput; g != nil {
		s += fmt.Sprintf("; SLO ttft %g ms, tpot %g ms, e2el %g ms (0: none)", g.TTFTMs, g.TPOTMs, g.E2ELMs)
	}
	return s + ". Times in ms; each row the mean over its repeats (± the 95 % interval's half-width).\n"
}

func lengths(n bench.Lengths) string {
	switch n.Dist {
	case bench.DistUniform:
		return fmt.Sprintf("%d..%d", n.Min, n.Max)
	case bench.DistNormal:
		return fmt.Sprintf("%g±%g", n.Mean, n.Std)
	case bench.DistFixed:
		if n.Tokens > 0 {
			return fmt.Sprint(n.Tokens)
		}
	}
	return "from the file"
}

// timing says how the measured samples were timed (Sample.Stamped), so
// that a reader comparing two runs sees when they were not timed alike.
func timing(rec bench.RunRecord) string {
	measured, stamped := 0, 0
	for _, c := range rec.Cells {
		for _, s := range c.Samples {
			if s.Error == "" {
				measured++
				if s.Stamped {
					stamped++
				}
			}
		}
	}
	switch {
	case measured == 0:
		return ""
	case stamped == measured:
		return "every sample by the kernel's arrival stamps of its chunks"
	case stamped == 0:
		return "every sample by when the runner read its chunks (no arrival stamps here)"
	}
	return fmt.Sprintf("%d of %d samples by the kernel's arrival stamps of their chunks, the others by when the runner read them", stamped, measured)
}

func hasFailure(rec bench.RunRecord) bool {
	for _, c := range rec.Cells {
		if c.Status == bench.CellFailed {
			return true
		}
	}
	return false
}

// figure is one median as report.md shows it: whole numbers from 1000 up,
// else one decimal; "–" when not measured, and "n/a" for what a run cannot
// measure of a server it attached to (its cold start, its processes' RSS).
func figure(f bench.Figure, cc bench.CompactCell) string {
	v := f.Get(cc)
	if v == nil && cc.Attached {
		switch f.Key {
		case "cold_start":
			return "n/a (attached)"
		case "peak_rss":
			return "n/a"
		}
	}
	switch {
	case v == nil:
		return "–"
	case *v >= 1000:
		return fmt.Sprintf("%.0f", *v)
	}
	return fmt.Sprintf("%.1f", *v)
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
