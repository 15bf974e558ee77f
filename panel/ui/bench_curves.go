package ui

import (
	"fmt"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/charts"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// LoadRun is one run's cell with load points, as the curves show it.
// Label ("A", "B") tells the runs of a comparison apart; a lone run has
// none.
type LoadRun struct {
	RunID string
	Label string
	Cell  bench.CompactCell
	// Requests is where the run's per-request files are served (the
	// requests route without a file), empty when they are not.
	Requests string
}

// LoadCurves shows one cell's load sweep: TTFT and TPOT against the load
// the server carried (achieved requests/s, or output tokens/s at the
// switch), with the SLO and the max rate found marked, a table of the
// points and a CSV of them. With a second run (a comparison) its curves
// are drawn over the first's, and its table follows.
type LoadCurves struct {
	app.Compo

	// ID tells this cell's charts apart from the other cells' ("0", "1").
	ID      string
	Runs    []LoadRun
	Palette charts.Palette

	// byTokens puts output tokens/s on the x axis; it stays while the
	// parent re-renders.
	byTokens bool
}

func (l *LoadCurves) axis() charts.LoadAxis {
	if l.byTokens {
		return charts.ByOutputTokens
	}
	return charts.ByRequestRate
}

// options is the TTFT chart's option and the TPOT chart's.
func (l *LoadCurves) options() (ttft, tpot []byte) {
	runs := make([]charts.CurveRun, len(l.Runs))
	for i, r := range l.Runs {
		runs[i] = charts.CurveRun{Label: r.Label, Cell: r.Cell}
	}
	return charts.LoadCurve(runs, charts.LoadTTFT, l.axis(), l.Palette).JSON(),
		charts.LoadCurve(runs, charts.LoadTPOT, l.axis(), l.Palette).JSON()
}

func (l *LoadCurves) Render() app.UI {
	if len(l.Runs) == 0 {
		return app.Text("")
	}
	key := l.Runs[0].Cell.Key
	ttft, tpot := l.options()
	axes := []struct {
		key, label string
		byTokens   bool
	}{{"requests", "requests/s", false}, {"tokens", "output tokens/s", true}}
	runs := l.Runs
	card := func(id, title, label string, option []byte) app.UI {
		return app.Div().Class("chart-card").Body(
			app.H3().Text(title),
			&Chart{ID: id, Label: label, Option: option},
		)
	}
	return app.Div().Class("load").DataSet("load", key).Body(
		app.H3().Body(app.Text("Load: "), modelName(key)),
		app.Div().Class("ranges").Attr("role", "group").Aria("label", "x axis").Body(
			app.Span().Class("muted").Text("x axis"),
			app.Range(axes).Slice(func(i int) app.UI {
				a := axes[i]
				return app.Button().Class("range").DataSet("axis", a.key).
					Aria("pressed", fmt.Sprint(a.byTokens == l.byTokens)).Text(a.label).
					OnClick(func(ctx app.Context, e app.Event) { l.byTokens = a.byTokens })
			}),
		),
		app.Div().Class("chart-grid").Body(
			card("chart-load-ttft-"+l.ID, "Time to first token", "TTFT p50 and p99 against "+l.axis().Name(), ttft),
			card("chart-load-tpot-"+l.ID, "Time per output token", "TPOT p50 and p99 against "+l.axis().Name(), tpot),
		),
		app.Range(runs).Slice(func(i int) app.UI { return loadSummary(runs[i]) }),
	)
}
