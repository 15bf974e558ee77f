package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// progress reports long work: on a terminal a bar redrawn in place (at most
// ten times a second), elsewhere a plain line at every tenth of the way, so
// logs stay readable.
type progress struct {
	w      io.Writer
	tty    bool
	label  string
	total  int
	clock  clock.Clock
	drawn  time.Time
	tenths int // plain mode: tenths already reported
	ended  bool
}

func newProgress(env cliEnv, label string, total int) *progress {
	return &progress{w: env.stderr, tty: env.tty, label: label, total: total, clock: env.clk()}
}

// set reports n of total done.
func (p *progress) set(n int) {
	if p.total <= 0 {
		return
	}
	if p.tty {
		t := p.clock.Now()
		if n < p.total && t.Sub(p.drawn) < 100*time.Millisecond {
			return
		}
		p.drawn = t
		const width = 30
		fill := width * n / p.total
		bar := strings.Repeat("=", fill)
		if fill < width {
			bar += ">" + strings.Repeat(" ", width-fill-1)
		}
		fmt.Fprintf(p.w, "\r%s [%s] %d/%d %3d%%", p.label, bar, n, p.total, 100*n/p.total)
		return
	}
	if t := 10 * n / p.total; t > p.tenths {
		p.tenths = t
		fmt.Fprintf(p.w, "%s: %d/%d (%d%%)\n", p.label, n, p.total, 100*n/p.total)
	}
}

// done ends the bar's line; calling it again does nothing.
func (p *progress) done() {
	if p.tty && p.total > 0 && !p.ended {
		fmt.Fprintln(p.w)
	}
	p.ended = true
}
