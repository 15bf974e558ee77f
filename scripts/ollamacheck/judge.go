package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// expect is what complete holds a run to beyond every phase measured.
type expect struct {
	started   bool   // the run started the servers: cold start measured
	identical bool   // each pair's cells were sent identical requests
	parity    string // each pair's bench.ParityWord; "" for any
}

func (e expect) said(rec bench.RunRecord) string {
	if len(rec.Plan.Pairs()) == 0 {
		return ""
	}
	var s string
	if e.identical {
		s += ", each pair sent identical requests"
	}
	if e.parity != "" {
		s += ", each pair's parity " + e.parity
	}
	return s
}

// complete checks the run ended complete with every phase of its plan
// measured in every cell, and what e expects.
func complete(rec bench.RunRecord, e expect) error {
	if len(rec.Cells) == 0 {
		return errors.New("no cell")
	}
	var bad []string
	if !rec.Complete {
		bad = append(bad, "the run is not complete: "+strings.Join(rec.Problems, "; "))
	}
	for _, c := range rec.Cells {
		bad = append(bad, cellProblems(rec.Plan.Phases, c, e.started)...)
	}
	for _, p := range rec.Plan.Pairs() {
		c, r := rec.Cells[p.Candidate], rec.Cells[p.Reference]
		if same, both := bench.SameRequests(c, r); e.identical && (both == 0 || same != both) {
			bad = append(bad, fmt.Sprintf("%s and %s: %d of %d requests sent to both identical", c.Key, r.Key, same, both))
		}
		if w := bench.ParityWord(bench.Parity(c.Probes, r.Probes)); e.parity != "" && w != e.parity {
			bad = append(bad, fmt.Sprintf("%s and %s: parity %q, want %q", c.Key, r.Key, w, e.parity))
		}
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

func cellProblems(phases bench.Phases, c bench.CellResult, started bool) []string {
	var bad []string
	if c.Status != bench.CellMeasured {
		bad = append(bad, fmt.Sprintf("%s ended %s: %s", c.Key, c.Status, strings.Join(c.Problems, "; ")))
	}
	if started && (c.ColdStartMs == nil || *c.ColdStartMs <= 0) {
		bad = append(bad, c.Key+": cold start not measured")
	}
	for _, ph := range phases.Names() {
		if ph == bench.PhaseLoad {
			continue
		}
		n, failed := 0, 0
		for _, s := range c.Samples {
			if s.Phase != ph {
				continue
			}
			if s.Error != "" {
				failed++
			} else {
				n++
			}
		}
		if n == 0 || failed > 0 {
			bad = append(bad, fmt.Sprintf("%s: phase %s: %d measured, %d failed", c.Key, ph, n, failed))
		}
	}
	return bad
}
