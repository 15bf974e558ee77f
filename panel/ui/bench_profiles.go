package ui

import (
	"fmt"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// runBlocked says why Run is disabled, or "" when it is not.
func (v *BenchView) runBlocked(p bench.Profile) string {
	switch {
	case p.Error != "":
		return "plan does not validate: " + p.Error
	case v.jobsErr != "":
		return "job state unknown: " + v.jobsErr
	case v.jobs.Lease.Held:
		why := "the GPU is held by job " + v.jobs.Lease.Holder
		if v.jobs.Lease.Since != 0 {
			why += " since " + format.Clock(v.jobs.Lease.Since)
		}
		if v.jobs.Lease.Waiting > 0 {
			why += fmt.Sprintf(" (%d waiting)", v.jobs.Lease.Waiting)
		}
		return why
	case v.busy:
		return "working…"
	}
	return ""
}

func (v *BenchView) renderProfiles() app.UI {
	var body app.UI
	switch {
	case v.profilesErr != "" && v.profilesAt.IsZero():
		body = staleAlert("Profiles", "profiles", v.profilesErr, v.profilesAt)
	case v.profilesAt.IsZero():
		body = loading("profiles")
	case len(v.profiles) == 0:
		body = empty("No bench-serve profiles. Write one with `mlx-metrics bench plan`.")
	default:
		ps := v.profiles
		body = app.Div().Class("table-wrap").Body(app.Table().Class("table profiles").Body(
			app.THead().Body(app.Tr().Body(th("Profile"), th("Scope"), th("Models"), thNum("Cells"), th(""))),
			app.TBody().Body(app.Range(ps).Slice(func(i int) app.UI {
				p := ps[i]
				blocked := v.runBlocked(p)
				models := "all served"
				if len(p.Models) > 0 {
					models = strings.Join(p.Models, ", ")
				}
				return app.Tr().DataSet("profile", p.Name).Body(
					app.Td().Class("profile").Body(app.Strong().Text(p.Name), app.If(p.Description != "", func() app.UI {
						return app.Div().Class("muted").Text(p.Description)
					})),
					// The labels name the cells where the table stacks (a phone).
					app.Td().DataSet("label", "Scope").Text(orDash(p.Scope)), // none when the plan does not load
					app.Td().DataSet("label", "Models").Body(modelName(models)),
					app.Td().Class("num").DataSet("label", "Cells").Text(itoa(p.Cells)),
					app.Td().Class("actions").Body(
						app.Button().Class("btn btn-primary").DataSet("action", "run").
							Disabled(blocked != "").Title(blocked).Text("Run").
							// The scope makes go-app swap the handler when the row's
							// profile changes; without it a reused row keeps the old closure.
							OnClick(func(ctx app.Context, e app.Event) { v.run(ctx, p.Name) }, app.EventScope(p.Name)),
						app.If(blocked != "" && blocked != "working…", func() app.UI {
							return app.Div().Class("reason").Text(blocked)
						}),
					),
				)
			})),
		))
	}
	gpu := v.jobs.Lease.Device
	if gpu == "" {
		gpu = format.Dash
	}
	var alert app.UI
	if v.profilesErr != "" && !v.profilesAt.IsZero() {
		alert = staleAlert("Profiles", "profiles", v.profilesErr, v.profilesAt)
	}
	return section("Profiles", alert, app.P().Class("note").Text("Device: "+gpu), body)
}
