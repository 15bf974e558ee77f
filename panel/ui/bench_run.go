package ui

import (
	"fmt"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

func (v *BenchView) renderDetail() app.UI {
	if v.detailErr != "" {
		return section("Run", app.P().Class("alert").DataSet("error", "detail").Text("Run unavailable: "+v.detailErr))
	}
	e := v.detail
	if e == nil {
		return app.Text("")
	}
	cells := e.Cells
	return section("Run "+e.ID,
		app.Div().Class("detail").DataSet("detail", e.ID).Body(
			app.P().Class("note").Text(fmt.Sprintf("%s · %s · %s · scope %s · %s", e.Profile, format.When(e.StartedAt), format.Ms(float64(e.DurationMs)), e.Scope, machine(e.Machine))),
			app.P().Body(
				app.A().Href(v.client().ReportURL(e.ID)).Target("_blank").Rel("noopener").Text("report.md"),
				app.Text(" · "),
				app.Button().Class("btn").DataSet("action", "close").Text("Close").
					OnClick(func(ctx app.Context, ev app.Event) { v.detail = nil }),
			),
			app.Div().Class("table-wrap").Body(app.Table().Class("table cells").Body(
				app.THead().Body(app.Tr().Body(th("Cell"), th("Status"), app.Range(bench.Figures).Slice(func(i int) app.UI {
					return thNum(figureHeader(bench.Figures[i]))
				}))),
				app.TBody().Body(app.Range(cells).Slice(func(i int) app.UI {
					c := cells[i]
					return app.Tr().Body(
						app.Td().Body(modelName(c.Key), app.If(c.Note != "", func() app.UI {
							return app.Div().Class("muted").Text(c.Note)
						})),
						app.Td().Text(c.Status),
						app.Range(bench.Figures).Slice(func(i int) app.UI {
							f := bench.Figures[i]
							if f.Key == "cold_start" && c.Attached {
								return tdNum("n/a (attached)") // the run did not start the server
							}
							return tdNum(figureValue(f, f.Get(c)))
						}),
					)
				})),
			)),
			app.If(len(e.Problems) > 0, func() app.UI {
				ps := e.Problems
				return app.Ul().Class("problems").Body(app.Range(ps).Slice(func(i int) app.UI {
					return app.Li().Class("error-text").Text(ps[i])
				}))
			}),
			renderHeadToHeads(e),
			v.renderLoad(e),
		),
	)
}

// figureHeader is a figure's column name, with an arrow for which way is
// better.
func figureHeader(f bench.Figure) string {
	arrow := "↓"
	if f.HigherIsBetter {
		arrow = "↑"
	}
	return strings.ToUpper(f.Name[:1]) + f.Name[1:] + " " + arrow
}

// figureValue renders a figure in its unit, the one the trend's axis uses.
func figureValue(f bench.Figure, v *float64) string {
	if v == nil {
		return format.Dash
	}
	switch f.Unit {
	case "tok/s":
		return format.Rate(*v)
	case "ms":
		return format.Ms(*v)
	}
	return fmt.Sprintf("%.0f %s", *v, f.Unit)
}

// orDash is s, or the dash for a value that is not known.
func orDash(s string) string {
	if s == "" {
		return format.Dash
	}
	return s
}

// machine names where a run ran; an imported run may not say.
func machine(m bench.Machine) string {
	if m == (bench.Machine{}) {
		return "machine not recorded"
	}
	s := m.Chip
	if m.GPU != "" {
		s += " / " + m.GPU
	}
	if m.Host != "" {
		s += " on " + m.Host
	}
	return s
}
