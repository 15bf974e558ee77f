package ui

import (
	"fmt"
	"sort"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/plural"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// RequestsView shows request timings over the window (p50/p95/p99/max),
// finish reasons since start, and the most recent requests.
type RequestsView struct {
	app.Compo

	Snap *snapshot.Snapshot
	// Windows are the frame's per-model windows, where Snap holds none
	// (decodeFrame).
	Windows *Windows

	// model narrows the timings to one model's window ("" is all models).
	model string
}

type timingRow struct {
	key, label string
	d          *snapshot.Distribution
	f          func(float64) string
}

func (v *RequestsView) Render() app.UI {
	if v.Snap == nil {
		return app.Div().Class("view").ID("view-requests").Body(empty("Waiting for the first snapshot…"))
	}
	r := v.Snap.Requests
	w := r.Window
	models := modelNames(v.Snap, v.Windows)
	if pw := modelWindow(v.Snap, v.Windows, v.model); pw != nil {
		w = *pw
	}
	// Times are slow at their high tail, rates at their low one: each
	// table shows the slow side.
	times := []timingRow{
		{"queue", "Queue wait", w.QueueMs, format.Ms},
		{"ttft", "Time to first token", w.TTFTMs, format.Ms},
		{"total", "Total time", w.TotalMs, format.Ms},
	}
	rates := []timingRow{
		{"prefill", "Prefill rate", w.PrefillTokensPerSecond, format.Rate},
		{"decode", "Decode rate", w.DecodeTokensPerSecond, format.Rate},
	}
	windowNote := fmt.Sprintf("over the last %d of %s (window %d)", w.Count, plural.Count(r.Finished, "finished request", "finished requests"), w.Size)
	if v.model != "" && w.Count != r.Window.Count {
		windowNote = fmt.Sprintf("%d of the last %s (window %d)", w.Count, plural.Count(r.Window.Count, "finished request", "finished requests"), r.Window.Size)
	}
	if w.CachedPromptShare != nil {
		windowNote += "; " + format.Percent(*w.CachedPromptShare) + " of prompt tokens cached"
	}
	return app.Div().Class("view").ID("view-requests").Body(
		section("Request timings",
			app.If(len(models) > 1, func() app.UI {
				return app.Div().Class("trend-controls").Body(
					app.Label().Text("Model "),
					app.Select().DataSet("control", "timings-model").OnChange(func(ctx app.Context, e app.Event) {
						v.model = ctx.JSSrc().Get("value").String()
					}).Body(
						app.Option().Value("").Selected(v.model == "").Text("all models"),
						app.Range(models).Slice(func(i int) app.UI {
							return app.Option().Value(models[i]).Selected(models[i] == v.model).Text(models[i])
						}),
					),
				)
			}),
			app.P().Class("note").Text(windowNote),
			timingTable("timings", []string{"p50", "p95", "p99", "max", "mean"}, times,
				func(d *snapshot.Distribution) []float64 { return []float64{d.P50, d.P95, d.P99, d.Max, d.Mean} }),
			app.P().Class("note").Text("Rates: the slow requests are the low tail."),
			timingTable("rates", []string{"p50", "p5", "p1", "min", "mean"}, rates,
				func(d *snapshot.Distribution) []float64 { return []float64{d.P50, d.P5, d.P1, d.Min, d.Mean} }),
		),
		section("Finish reasons", finishReasons(r)),
		section("Recent requests", recentTable(r.Recent)),
	)
}

func finishReasons(r snapshot.Requests) app.UI {
	if len(r.ByFinish) == 0 {
		return empty("No finished requests yet.")
	}
	type kv struct {
		k events.FinishReason
		n int64
	}
	var all []kv
	var total int64
	for k, n := range r.ByFinish {
		all = append(all, kv{k, n})
		total += n
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].n != all[j].n {
			return all[i].n > all[j].n
		}
		return all[i].k < all[j].k
	})
	return app.Ul().Class("finish").Body(app.Range(all).Slice(func(i int) app.UI {
		share := float64(all[i].n) / float64(total)
		return app.Li().DataSet("finish", all[i].k).Body(
			app.Span().Class("finish-name").Text(all[i].k),
			app.Span().Class("bar").Body(app.Span().Class("bar-fill "+finishClass(all[i].k)).Style("width", fmt.Sprintf("%.1f%%", share*100))),
			app.Span().Class("num").Text(format.Count(all[i].n)+" · "+format.Percent(share)),
		)
	}))
}

func recentTable(recent []snapshot.Recent) app.UI {
	if len(recent) == 0 {
		return empty("No finished requests yet.")
	}
	// Newest first reads best; the snapshot keeps them newest last.
	rs := make([]snapshot.Recent, len(recent))
	for i := range recent {
		rs[i] = recent[len(recent)-1-i]
	}
	return app.Div().Class("table-wrap").Body(app.Table().Class("table recent").Body(
		app.THead().Body(app.Tr().Body(
			th("At"), th("Model"), th("Request"), th("Finish"), thNum("Prompt (cached)"), thNum("Completion"),
			thNum("Queue"), thNum("TTFT"), thNum("Decode"), thNum("Total"),
		)),
		app.TBody().Body(app.Range(rs).Slice(func(i int) app.UI {
			q := rs[i]
			return app.Tr().Body(
				app.Td().Text(format.Clock(q.At)),
				app.Td().Body(modelName(q.Model)),
				app.Td().Class("mono").Text(q.RequestID),
				app.Td().Body(app.Span().Class("finish-tag "+finishClass(q.Finish)).Text(string(q.Finish))),
				tdNum(fmt.Sprintf("%s (%s)", format.Count(q.PromptTokens), format.Count(q.CachedPromptTokens))),
				tdNum(format.Count(q.CompletionTokens)),
				tdNum(format.MsPtr(q.QueueMs)),
				tdNum(format.MsPtr(q.TTFTMs)),
				tdNum(format.RatePtr(q.DecodeTokensPerSecond)),
				tdNum(format.Ms(q.TotalMs)),
			)
		})),
	))
}

// finishClass styles the known finish reasons; anything else a host sends
// stays text and gets the neutral style.
func finishClass(f events.FinishReason) string {
	switch f {
	case events.FinishStop, events.FinishLength, events.FinishCancelled, events.FinishError:
		return "finish-" + string(f)
	}
	return "finish-other"
}

// timingTable is one table of distributions, each row's figures as cols
// name them.
func timingTable(class string, cols []string, rows []timingRow, figures func(*snapshot.Distribution) []float64) app.UI {
	return app.Div().Class("table-wrap").Body(app.Table().Class("table timings "+class).Body(
		app.THead().Body(app.Tr().Body(th(""), thNum("n"), app.Range(cols).Slice(func(i int) app.UI { return thNum(cols[i]) }))),
		app.TBody().Body(app.Range(rows).Slice(func(i int) app.UI {
			row := rows[i]
			if row.d == nil {
				return app.Tr().DataSet("timing", row.key).Body(
					app.Td().Text(row.label), tdNum("0"),
					app.Td().ColSpan(len(cols)).Class("num muted").Text("not measured in this window"),
				)
			}
			vals := figures(row.d)
			return app.Tr().DataSet("timing", row.key).Body(
				app.Td().Text(row.label), tdNum(itoa(row.d.Count)),
				app.Range(vals).Slice(func(i int) app.UI { return tdNum(row.f(vals[i])) }),
			)
		})),
	))
}
