package ui

import (
	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// hasLoad reports whether a run measured a load sweep in any cell.
func hasLoad(e bench.HistoryEntry) bool {
	for _, c := range e.Cells {
		if len(c.LoadPoints) > 0 {
			return true
		}
	}
	return false
}

// noCompare is the compare control's value for no other run: not a run
// id (bench.RunIDPattern), and not empty, which go-app leaves out (the
// option's value would then be its text).
const noCompare = "-"

// compared is the run the open one is compared with: one of the listed
// runs, nil when none is chosen or it left the list.
func (v *BenchView) compared() *bench.HistoryEntry {
	if v.compareID == "" || v.detail == nil || v.compareID == v.detail.ID {
		return nil
	}
	for i := range v.history {
		if v.history[i].ID == v.compareID {
			return &v.history[i]
		}
	}
	return nil
}

// renderLoad is the open run's load sweeps, a LoadCurves per cell that
// measured one; compared with another run (chosen here among the listed
// runs that measured a sweep), that run's cell of the same key is drawn
// over it as B.
func (v *BenchView) renderLoad(e *bench.HistoryEntry) app.UI {
	if !hasLoad(*e) {
		return app.Text("")
	}
	var others []bench.HistoryEntry
	for _, h := range v.history {
		if h.ID != e.ID && hasLoad(h) {
			others = append(others, h)
		}
	}
	other := v.compared()
	cells := loadRuns(*e, other)
	for _, runs := range cells {
		for i := range runs {
			// An imported run's requests stayed with the tool that measured it.
			if r := &runs[i]; (r.RunID == e.ID && e.Source == nil) || (other != nil && r.RunID == other.ID && other.Source == nil) {
				r.Requests = v.client().RequestsBase(r.RunID)
			}
		}
	}
	return app.Div().Class("load-sweeps").Body(
		app.If(len(others) > 0, func() app.UI {
			return app.Div().Class("trend-controls").Body(
				app.Label().Text("Compare with "),
				app.Select().DataSet("control", "compare").OnChange(func(ctx app.Context, ev app.Event) {
					v.compareID = ctx.JSSrc().Get("value").String() // noCompare matches no run
				}).Body(
					app.Option().Value(noCompare).Selected(other == nil).Text("no other run"),
					app.Range(others).Slice(func(i int) app.UI {
						o := others[i]
						return app.Option().Value(o.ID).Selected(other != nil && o.ID == other.ID).
							Text(o.Profile + " · " + format.When(o.StartedAt) + " · " + o.ID)
					}),
				),
			)
		}),
		app.If(other != nil, func() app.UI {
			return app.P().Class("note").DataSet("compare", other.ID).
				Text("A: this run (" + e.ID + "); B: " + other.ID + ", " + other.Profile + " at " + format.When(other.StartedAt) +
					". A cell B did not measure shows A alone.")
		}),
		app.Range(cells).Slice(func(i int) app.UI {
			return &LoadCurves{ID: itoa(i), Runs: cells[i], Palette: v.Palette}
		}),
	)
}

// loadRuns is, per cell of e that measured a sweep, the runs its curves
// show: e's as A and, when other is given and measured a sweep in the cell
// of the same key, other's as B; without other, e's alone and unlabelled.
func loadRuns(e bench.HistoryEntry, other *bench.HistoryEntry) [][]LoadRun {
	var cells [][]LoadRun
	for _, c := range e.Cells {
		if len(c.LoadPoints) == 0 {
			continue
		}
		if other == nil {
			cells = append(cells, []LoadRun{{RunID: e.ID, Cell: c}})
			continue
		}
		runs := []LoadRun{{RunID: e.ID, Label: "A", Cell: c}}
		for _, oc := range other.Cells {
			if oc.Key == c.Key && len(oc.LoadPoints) > 0 {
				runs = append(runs, LoadRun{RunID: other.ID, Label: "B", Cell: oc})
				break
			}
		}
		cells = append(cells, runs)
	}
	return cells
}
