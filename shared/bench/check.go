package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"time"
)

// RunIDPattern is what a run id may look like: NewRunID's form and any
// other name that is safe as a path element and a URL segment.
var RunIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// Bounds of a history entry that comes from outside (an imported run.json).
// They are physical, not tight: a figure beyond them is a broken or hostile
// record, not a fast machine.
const (
	// MaxFigure bounds every median and spread: tokens per second, ms,
	// MB (1e9 ms is eleven days; 1e9 MB a petabyte).
	MaxFigure = 1e9
	// MaxCells and MaxProblems bound one run's cells and problems.
	MaxCells    = 1000
	MaxProblems = 200
	// MaxText bounds a name, a key, a note or a problem, in bytes.
	MaxText = 4096
	// MaxHost bounds machine.host, a host name (at most 253 bytes in the
	// DNS): GET /history?host= must be able to ask for it, percent-encoded
	// in a request line of a few KiB.
	MaxHost = 255
	// MaxEntryBytes bounds a whole entry, encoded: a real one of dozens
	// of cells is tens of KB; the bounds above alone allow 24 MB.
	MaxEntryBytes = 1 << 20
	// earliestRun is 2020-01-01: no record is older than the project.
	earliestRun = 1577836800000
	// clockSkew is how far in the future a run may say it finished.
	clockSkew = 24 * time.Hour
)

// Check reports the first way e breaks the bounds above, as an error whose
// message quotes no unbounded input. now is the reader's clock: a run may
// not have finished more than a day after it.
func (e HistoryEntry) Check(now time.Time) error {
	if !RunIDPattern.MatchString(e.ID) {
		return fmt.Errorf("id: want letters, digits, '.', '_' or '-', at most 128, not %.40q", e.ID)
	}
	latest := now.Add(clockSkew).UnixMilli()
	switch {
	case e.StartedAt < earliestRun || e.StartedAt > latest:
		return fmt.Errorf("startedAt %d: not a time between 2020 and now", e.StartedAt)
	case e.FinishedAt < e.StartedAt || e.FinishedAt > latest:
		return fmt.Errorf("finishedAt %d: not between startedAt and now", e.FinishedAt)
	case len(e.Cells) > MaxCells:
		return fmt.Errorf("%d cells: at most %d", len(e.Cells), MaxCells)
	case len(e.Problems) > MaxProblems:
		return fmt.Errorf("%d problems: at most %d", len(e.Problems), MaxProblems)
	case e.Machine.MemoryBytes < 0:
		return fmt.Errorf("machine.memoryBytes %d: negative", e.Machine.MemoryBytes)
	case len(e.Machine.Host) > MaxHost:
		return fmt.Errorf("machine.host of %d bytes: at most %d", len(e.Machine.Host), MaxHost)
	}
	texts := []string{e.Profile, e.Scope, e.RunDirectory, e.Machine.Chip, e.Machine.Host, e.Machine.OS, e.Machine.GPU}
	texts = append(texts, e.Problems...)
	if e.Source != nil {
		texts = append(texts, e.Source.Tool, e.Source.Version)
	}
	for _, c := range e.Cells {
		texts = append(texts, c.Key, c.Model, c.Kind, c.Configuration, string(c.Status), c.Note)
		for _, p := range c.Probes {
			texts = append(texts, p.Kind, p.Finish, p.Text, p.Error)
		}
		if c.MaxRate != nil {
			texts = append(texts, c.MaxRate.Note)
		}
		for _, p := range c.LoadPoints {
			texts = append(texts, p.Search, p.Arrival, p.RequestsFile)
			texts = append(texts, p.Problems...)
		}
	}
	for _, s := range texts {
		if len(s) > MaxText {
			return fmt.Errorf("a text of %d bytes: at most %d", len(s), MaxText)
		}
	}
	if b, err := json.Marshal(e); err == nil && len(b) > MaxEntryBytes {
		return fmt.Errorf("the entry is %d bytes encoded: at most %d", len(b), MaxEntryBytes)
	}
	for i, c := range e.Cells {
		for _, f := range Figures {
			if v := f.Get(c); v != nil && !inFigureBounds(*v) {
				return fmt.Errorf("cells[%d].%s %g: want 0 to %g", i, f.Field, *v, float64(MaxFigure))
			}
		}
		for k, r := range c.Spread {
			if !inFigureBounds(r.Min) || !inFigureBounds(r.Max) || r.Min > r.Max {
				return fmt.Errorf("cells[%d].spread.%.40q: want 0 <= min <= max <= %g", i, k, float64(MaxFigure))
			}
		}
		if err := checkLoad(c); err != nil {
			return fmt.Errorf("cells[%d].%w", i, err)
		}
		if err := checkProbes(c.Probes); err != nil {
			return fmt.Errorf("cells[%d].%w", i, err)
		}
	}
	return nil
}

// MaxProbes bounds a cell's parity probes (two kinds are asked).
const MaxProbes = 8

// checkProbes reports too many probes or a token count outside
// 0..MaxFigure.
func checkProbes(ps []Probe) error {
	if len(ps) > MaxProbes {
		return fmt.Errorf("probes: %d, at most %d", len(ps), MaxProbes)
	}
	for i, p := range ps {
		if p.PromptTokens < 0 || p.PromptTokens > MaxFigure || p.CompletionTokens < 0 || p.CompletionTokens > MaxFigure {
			return fmt.Errorf("probes[%d]: token counts %d and %d, want 0 to %g", i, p.PromptTokens, p.CompletionTokens, float64(MaxFigure))
		}
	}
	return nil
}

// checkLoad reports the first figure of a cell's load points, max rate or
// SLO outside 0..MaxFigure (a NaN, a negative count), or a point's list
// of problems past MaxProblems.
func checkLoad(c CompactCell) error {
	if len(c.LoadPoints) > MaxLoadPoints*MaxLoadRepeats {
		return fmt.Errorf("loadPoints: %d, at most %d", len(c.LoadPoints), MaxLoadPoints*MaxLoadRepeats)
	}
	if mr := c.MaxRate; mr != nil {
		for _, v := range []float64{mr.Rate, mr.FailedAt, mr.MinShare, float64(mr.Points)} {
			if !inFigureBounds(v) {
				return fmt.Errorf("maxRate: %g, want 0 to %g", v, float64(MaxFigure))
			}
		}
	}
	if s := c.SLO; s != nil {
		for _, v := range []float64{s.TTFTMs, s.TPOTMs, s.E2ELMs} {
			if !inFigureBounds(v) {
				return fmt.Errorf("slo: %g, want 0 to %g", v, float64(MaxFigure))
			}
		}
	}
	for j, p := range c.LoadPoints {
		if len(p.Problems) > MaxProblems {
			return fmt.Errorf("loadPoints[%d].problems: %d, at most %d", j, len(p.Problems), MaxProblems)
		}
		vs := []float64{float64(p.Point), float64(p.Repeat), p.OfferedRate, float64(p.Concurrency), float64(p.Requests),
			float64(p.Completed), float64(p.Errors), float64(p.Warmup), p.DurationS, p.SendRate, p.RequestThroughput,
			p.OutputThroughput, p.TotalTokenThroughput, float64(p.InputTokens), float64(p.OutputTokens), float64(p.GoodRequests)}
		if p.Goodput != nil {
			vs = append(vs, *p.Goodput)
		}
		for _, d := range []Dist{p.TTFT, p.ITL, p.TPOT, p.E2EL, p.Lag} {
			vs = append(vs, float64(d.Count), d.Mean, d.Std, d.Median, d.P90, d.P95, d.P99, d.P999)
		}
		for _, v := range vs {
			if !inFigureBounds(v) {
				return fmt.Errorf("loadPoints[%d]: a figure of %g, want 0 to %g", j, v, float64(MaxFigure))
			}
		}
	}
	return nil
}

func inFigureBounds(v float64) bool {
	return !math.IsNaN(v) && v >= 0 && v <= MaxFigure
}

// Check reports the first figure of r's cells outside 0..MaxFigure (a
// sample's times, rates and token counts, a cold start) or a negative peak
// RSS, as an error whose message quotes no unbounded input. Compact keeps
// only positive samples, so such a figure would otherwise be dropped
// without a word.
func (r RunRecord) Check() error {
	for i, c := range r.Cells {
		if c.ColdStartMs != nil && !inFigureBounds(*c.ColdStartMs) {
			return fmt.Errorf("cells[%d].coldStartMs %g: want 0 to %g", i, *c.ColdStartMs, float64(MaxFigure))
		}
		if c.PeakRSSBytes < 0 {
			return fmt.Errorf("cells[%d].peakRssBytes %d: negative", i, c.PeakRSSBytes)
		}
		for j, s := range c.Samples {
			figures := []struct {
				name string
				v    float64
			}{
				{"promptTokens", float64(s.PromptTokens)}, {"completionTokens", float64(s.CompletionTokens)},
				{"ttftMs", s.TTFTMs}, {"totalMs", s.TotalMs}, {"prefillTokensPerSecond", s.PrefillTokensPerSecond},
				{"decodeTokensPerSecond", s.DecodeTokensPerSecond}, {"aggregateTokensPerSecond", s.AggregateTokensPerSecond},
			}
			for _, f := range figures {
				if !inFigureBounds(f.v) {
					return fmt.Errorf("cells[%d].samples[%d].%s %g: want 0 to %g", i, j, f.name, f.v, float64(MaxFigure))
				}
			}
		}
	}
	return nil
}
