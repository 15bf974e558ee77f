package ui

import (
	"fmt"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/charts"
	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// ServingView shows the scheduler: headline tiles and the tokens-per-second
// chart with active rows and queue depth over the series window.
type ServingView struct {
	app.Compo

	Snap    *snapshot.Snapshot
	Palette charts.Palette
}

// Totals sums the latest scheduler sample of every model.
type Totals struct {
	TokensPerSecond float64
	Active          int
	Capacity        int
	Queued          int
}

// SchedulerTotals adds up the models' latest scheduler samples.
func SchedulerTotals(s *snapshot.Snapshot) Totals {
	var t Totals
	if s == nil {
		return t
	}
	for _, sc := range s.Schedulers {
		t.TokensPerSecond += sc.TokensPerSecond
		t.Active += sc.Active
		t.Capacity += sc.Capacity
		t.Queued += sc.Queued
	}
	return t
}

func (v *ServingView) Render() app.UI {
	s := v.Snap
	if s == nil {
		return app.Div().Class("view").ID("view-serving").Body(empty("Waiting for the first snapshot…"))
	}
	t := SchedulerTotals(s)
	rows := fmt.Sprintf("%d / %d", t.Active, t.Capacity)
	occupancy := ""
	if t.Capacity > 0 {
		occupancy = format.Percent(float64(t.Active)/float64(t.Capacity)) + " occupied"
	}
	resident := 0
	for _, m := range s.Models {
		if m.State == snapshot.StateResident {
			resident++
		}
	}
	return app.Div().Class("view").ID("view-serving").Body(
		app.Div().Class("tiles").Body(
			tile("throughput", "Throughput", format.Rate(t.TokensPerSecond), fmt.Sprintf("%d models sampled", len(s.Schedulers))),
			tile("rows", "Batch rows", rows, occupancy),
			tile("queued", "Queued", format.Count(int64(t.Queued)), "requests waiting"),
			tile("finished", "Finished", format.Count(s.Requests.Finished), "requests since start"),
			tile("models", "Models resident", itoa(resident), fmt.Sprintf("of %d known", len(s.Models))),
		),
		section("Tokens per second, active rows and queue depth",
			app.If(len(s.Series) == 0, func() app.UI { return empty("No scheduler samples yet.") }).
				Else(func() app.UI {
					return &Chart{ID: "chart-throughput", Label: "tokens per second over time", Option: charts.Throughput(s.Series, v.Palette)}
				}),
		),
	)
}
