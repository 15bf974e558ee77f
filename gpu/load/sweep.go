package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/mlx-bun/mlx-metrics/gpu/loadgen"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/duration"
)

// Options run one cell's load phase.
type Options struct {
	Client *loadgen.Client
	Model  string
	// Load is the plan's load phase with its defaults filled.
	Load bench.Load
	// Nonce opens every prompt (with the point, repeat and request after
	// it): the run's id and the cell's place.
	Nonce string
	// Dir is the run directory; each point's requests go to
	// Dir/Files-pNN-rN.ndjson.
	Dir, Files string
	// Timeout bounds one request of a prompt and max_tokens.
	Timeout func(promptTokens, maxTokens int) time.Duration
	// Out gets a line per point.
	Out io.Writer
}

// Result is a cell's load phase.
type Result struct {
	Points  []bench.LoadPoint
	MaxRate *bench.MaxRate
}

// Run measures the sweep the plan gives: its rates or concurrencies in
// order, each Repeats times, or the search for the highest rate. It stops
// at the first point where no request completed (the server is gone or
// refuses them all), with what was measured before.
func Run(ctx context.Context, o Options) (Result, error) {
	l := o.Load
	wl, err := newWorkload(l.Workload, l.Seed)
	if err != nil {
		return Result{}, err
	}
	s := &sender{client: o.Client, model: o.Model, load: l, wl: wl, nonce: o.Nonce, timeout: o.Timeout}
	var res Result
	n := 0
	// The progress lines count the repeats measured out of those planned
	// (a search's bound: it may end sooner).
	planned := len(l.Rates) + len(l.Concurrencies)
	if l.FindMaxRate != nil {
		planned = l.FindMaxRate.MaxPoints
	}
	prog := &progress{out: o.Out, total: planned * l.Repeats}
	measure := func(p point) ([]bench.LoadPoint, error) {
		n++
		p.index = n
		var reps []bench.LoadPoint
		for r := 1; r <= l.Repeats; r++ {
			p.repeat = r
			lp, err := o.measure(ctx, s, p)
			prog.tell(lp)
			res.Points = append(res.Points, lp)
			reps = append(reps, lp)
			if err != nil {
				return reps, err
			}
		}
		return reps, nil
	}
	switch {
	case l.FindMaxRate != nil:
		res.MaxRate, err = search(*l.FindMaxRate, l.MaxConcurrency, measure)
	case len(l.Concurrencies) > 0:
		for _, c := range l.Concurrencies {
			if _, err = measure(point{streams: c}); err != nil {
				break
			}
		}
	default:
		for _, r := range l.Rates {
			if _, err = measure(point{rate: r, streams: l.MaxConcurrency}); err != nil {
				break
			}
		}
	}
	return res, err
}

// measure runs one repeat of a point into its file and tells it.
func (o Options) measure(ctx context.Context, s *sender, p point) (bench.LoadPoint, error) {
	name := fmt.Sprintf("%s-p%02d-r%d.ndjson", o.Files, p.index, p.repeat)
	f, err := os.Create(filepath.Join(o.Dir, name))
	if err != nil {
		return bench.LoadPoint{Point: p.index, Repeat: p.repeat}, fmt.Errorf("point %d: create its requests file: %w", p.index, errors.Unwrap(err))
	}
	lp, err := s.run(ctx, p, f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("point %d: %w", p.index, errors.Unwrap(cerr))
	}
	lp.RequestsFile = name
	if err == nil && lp.Completed == 0 {
		err = fmt.Errorf("point %d: no request completed (%s)", p.index, firstProblem(lp))
	}
	return lp, err
}

func firstProblem(lp bench.LoadPoint) string {
	if len(lp.Problems) > 0 {
		return lp.Problems[0]
	}
	return "no problem recorded"
}

// progress tells each point as it ends: "load point 3/8: point 3.1 …",
// a step line the backend reads as the phase's progress.
type progress struct {
	out         io.Writer
	done, total int
}

func (p *progress) tell(lp bench.LoadPoint) {
	p.done++
	fmt.Fprintf(p.out, "load point %d/%d: %s\n", p.done, max(p.total, p.done), describe(lp))
}

// describe is a point's figures, in a line.
func describe(lp bench.LoadPoint) string {
	load := fmt.Sprintf("%d streams", lp.Concurrency)
	if lp.OfferedRate > 0 {
		load = fmt.Sprintf("%g req/s %s", lp.OfferedRate, lp.Arrival)
		if lp.Concurrency > 0 {
			load += fmt.Sprintf(" (cap %d)", lp.Concurrency)
		}
	}
	line := fmt.Sprintf("point %d.%d at %s: %d/%d ok, %.2f req/s, %.1f output tok/s, TTFT p50 %s p99 %s, TPOT p50 %s, lag p99 %s",
		lp.Point, lp.Repeat, load, lp.Completed, lp.Requests, lp.RequestThroughput, lp.OutputThroughput,
		duration.Ms(lp.TTFT.Median), duration.Ms(lp.TTFT.P99), duration.Ms(lp.TPOT.Median), duration.Ms(lp.Lag.P99))
	if lp.Goodput != nil {
		line += fmt.Sprintf(", goodput %.2f req/s", *lp.Goodput)
	}
	if lp.Saturated {
		line += ", saturated"
	}
	return line
}
