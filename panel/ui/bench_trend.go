package ui

import (
	"fmt"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/charts"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/plural"
)

func (v *BenchView) renderTrend() app.UI {
	if len(v.history) == 0 {
		return app.Text("")
	}
	var names []string
	seen := map[string]bool{}
	for _, e := range v.history {
		if !seen[e.Profile] {
			seen[e.Profile] = true
			names = append(names, e.Profile)
		}
	}
	f := bench.Figures[min(v.figure, len(bench.Figures)-1)]
	return section("Trend across runs",
		app.Div().Class("trend-controls").Body(
			app.Label().Text("Profile "),
			app.Select().DataSet("control", "trend-profile").OnChange(func(ctx app.Context, e app.Event) {
				v.trendProfile = ctx.JSSrc().Get("value").String()
			}).Body(app.Range(names).Slice(func(i int) app.UI {
				return app.Option().Value(names[i]).Selected(names[i] == v.trendProfile).Text(names[i])
			})),
			app.Label().Text(" Figure "),
			app.Select().DataSet("control", "trend-figure").OnChange(func(ctx app.Context, e app.Event) {
				fmt.Sscan(ctx.JSSrc().Get("value").String(), &v.figure)
			}).Body(app.Range(bench.Figures).Slice(func(i int) app.UI {
				return app.Option().Value(itoa(i)).Selected(i == v.figure).Text(bench.Figures[i].Name)
			})),
			app.Label().Body(
				app.Input().Type("checkbox").DataSet("control", "trend-incomplete").Checked(v.withIncomplete).
					OnChange(func(ctx app.Context, e app.Event) { v.withIncomplete = ctx.JSSrc().Get("checked").Bool() }),
				app.Text(" include runs that did not complete"),
			),
		),
		&Chart{ID: "chart-trend", Label: "trend of " + f.Name, Option: charts.Trend(v.history, v.trendProfile, f, v.withIncomplete, v.Palette).JSON()},
		v.trendNote(),
	)
}

// trendNote says which runs the trend shows and how many it leaves out, so
// a cancelled run's absence is explained, not silent. data-runs lists the
// shown runs' IDs for the browser tests.
func (v *BenchView) trendNote() app.UI {
	runs, leftOut := charts.TrendRuns(v.history, v.trendProfile, v.withIncomplete)
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	text := plural.Count(len(runs), "run", "runs") + " of " + v.trendProfile
	if leftOut > 0 {
		text += "; " + plural.Count(leftOut, "run", "runs") + " that did not complete left out"
	}
	return app.P().Class("muted trend-note").DataSet("runs", strings.Join(ids, " ")).Text(text)
}
