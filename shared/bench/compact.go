package bench

import (
	"sort"
	"time"
)

// Compact reduces a run record to its history entry: per cell, the median
// of each figure over the successful samples of its phase.
func Compact(r RunRecord, runDirectory string) HistoryEntry {
	e := HistoryEntry{
		ID:           r.ID,
		Profile:      r.Profile,
		Scope:        r.Plan.Scope,
		StartedAt:    r.StartedAt,
		FinishedAt:   r.FinishedAt,
		DurationMs:   r.FinishedAt - r.StartedAt,
		Complete:     r.Complete,
		ExitCode:     r.ExitCode,
		Problems:     append([]string{}, r.Problems...),
		Machine:      r.Machine,
		RunDirectory: runDirectory,
		Cells:        make([]CompactCell, 0, len(r.Cells)),
		Source:       r.Source,
	}
	for _, c := range r.Cells {
		cc := CompactCellOf(c)
		if l := r.Plan.Phases.Load; l != nil && l.Goodput != nil && len(cc.LoadPoints) > 0 {
			slo := *l.Goodput
			cc.SLO = &slo
		}
		e.Cells = append(e.Cells, cc)
	}
	return e
}

// CompactCellOf is one cell's medians, and the spread of the samples
// under each.
func CompactCellOf(c CellResult) CompactCell {
	cc := CompactCell{
		Key: c.Key, Model: c.Model, Kind: c.Kind, Configuration: c.Configuration,
		Status: c.Status, Note: c.Note, Attached: c.Attached, Probes: c.Probes,
	}
	if c.Status != CellMeasured {
		// As the original: a skipped or failed cell has no figures, even
		// from phases measured before the one that failed (the run's
		// record keeps those samples), so no comparison counts them.
		return cc
	}
	for _, f := range Figures {
		if f.sample == nil {
			continue
		}
		xs := positive(c.Samples, f.phase, f.sample)
		*f.field(&cc) = Median(xs)
		if len(xs) > 0 {
			if cc.Spread == nil {
				cc.Spread = map[string]Range{}
			}
			r := Range{Min: xs[0], Max: xs[0]}
			for _, x := range xs {
				r.Min, r.Max = min(r.Min, x), max(r.Max, x)
			}
			cc.Spread[f.Key] = r
		}
	}
	if c.ColdStartMs != nil && *c.ColdStartMs > 0 {
		v := *c.ColdStartMs
		cc.ColdStartMs = &v
	}
	if c.PeakRSSBytes > 0 {
		v := float64(c.PeakRSSBytes) / (1 << 20)
		cc.PeakRssMB = &v
	}
	cc.LoadPoints, cc.MaxRate = c.LoadPoints, c.MaxRate
	return cc
}

// positive is f of the phase's measured samples, where it is positive.
func positive(samples []Sample, phase string, f func(Sample) float64) []float64 {
	var xs []float64
	for _, s := range PhaseSamples(samples, phase) {
		if v := f(s); v > 0 {
			xs = append(xs, v)
		}
	}
	return xs
}

// PhaseSamples is the samples of phase without error, from its last
// attempt only: a phase retried after a failure is measured by the retry,
// so its figures never mix the runs of two attempts.
func PhaseSamples(samples []Sample, phase string) []Sample {
	last := 0
	for _, s := range samples {
		if s.Phase == phase {
			last = max(last, s.Attempt)
		}
	}
	var out []Sample
	for _, s := range samples {
		if s.Phase == phase && s.Attempt == last && s.Error == "" {
			out = append(out, s)
		}
	}
	return out
}

// Median of xs by the one percentile rule (Percentile: the mean of the
// middle two for an even count), nil when xs is empty. It sorts xs in
// place.
func Median(xs []float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	sort.Float64s(xs)
	m := Percentile(xs, 50)
	return &m
}

// NewRunID names a run by its start time so that ids sort by time:
// 20261202T155633Z-<suffix>. suffix keeps runs started in the same second apart.
func NewRunID(start time.Time, suffix string) string {
	return start.UTC().Format("20060102T150405Z") + "-" + suffix
}
