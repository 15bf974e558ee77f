package ui

import (
	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/charts"
	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// ModelsView shows each model's lifecycle and memory.
type ModelsView struct {
	app.Compo

	Snap    *snapshot.Snapshot
	Palette charts.Palette

	rows rowCap // the table's bound
}

func (v *ModelsView) Render() app.UI {
	if v.Snap == nil || len(v.Snap.Models) == 0 {
		return app.Div().Class("view").ID("view-models").Body(empty("No model has reported yet."))
	}
	ms := v.Snap.Models
	rows := ms[:v.rows.shown(len(ms))]
	unit := charts.MemoryUnit(ms) // the chart's, so both read alike
	pal := v.Palette
	return app.Div().Class("view").ID("view-models").Body(
		section("Models",
			app.Div().Class("table-wrap").Body(
				app.Table().Class("table").Body(
					app.THead().Body(app.Tr().Body(
						th("Model"), th("State"), thNum("Loads"), thNum("Last load"), thNum("Unloads"), thNum("Last unload"),
						thNum("Swaps"), thNum("Last swap"), thNum("Weights"), thNum("KV"), thNum("Prefix cache"), th("Last error"),
					)),
					app.TBody().Body(app.Range(rows).Slice(func(i int) app.UI {
						m := rows[i]
						unload := format.MsPtr(m.LastUnloadMs)
						if m.LastUnloadReason != nil && m.LastUnloadMs != nil {
							unload += " (" + *m.LastUnloadReason + ")"
						}
						return app.Tr().Body(
							app.Td().Body(modelName(m.Model)),
							app.Td().Body(app.Span().Class("state "+stateClass(m.State)).Text(m.State)),
							tdNum(format.Count(m.Loads)),
							tdNum(format.MsPtr(m.LastLoadMs)),
							tdNum(format.Count(m.Unloads)),
							tdNum(unload),
							tdNum(format.Count(m.Swaps)),
							tdNum(format.MsPtr(m.LastSwapMs)),
							tdNum(format.BytesIn(m.WeightsBytes, unit)),
							tdNum(format.BytesIn(m.KVBytes, unit)),
							tdNum(format.BytesIn(m.PrefixCacheBytes, unit)),
							lastError(m.LastError),
						)
					})),
				),
			),
			v.rows.more("models", len(ms), "models"),
		),
		section("Memory per model",
			&Chart{ID: "chart-memory", Label: "memory per model", Class: "chart chart-bars", Build: func() []byte { return charts.Memory(ms, pal).JSON() }},
		),
	)
}

// th heads a column of text; thNum a column of numbers, right-aligned
// like the tdNum cells under it.
func th(s string) app.UI    { return app.Th().Text(s) }
func thNum(s string) app.UI { return app.Th().Class("num").Text(s) }
func tdNum(s string) app.UI { return app.Td().Class("num").Text(s) }

// stateClass styles the known model states.
func stateClass(s string) string {
	switch s {
	case snapshot.StateLoading, snapshot.StateResident, snapshot.StateUnloaded, snapshot.StateFailed:
		return "state-" + s
	}
	return "state-other"
}

// deref is the text of an optional string, "" when null.
// lastError is a model's last error, or a dash as every other cell
// without a value has (an empty cell reads as not loaded yet).
func lastError(e *string) app.UI {
	if e == nil {
		return app.Td().Class("muted").Text(format.Dash)
	}
	return app.Td().Class("error-text").Text(*e)
}
