package ui

import (
	"fmt"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/plural"
)

// bestDecode is a run's highest decode median over its cells.
func bestDecode(e bench.HistoryEntry) *float64 {
	var best *float64
	for _, c := range e.Cells {
		if c.DecodeTokensPerSecond != nil && (best == nil || *c.DecodeTokensPerSecond > *best) {
			v := *c.DecodeTokensPerSecond
			best = &v
		}
	}
	return best
}

func measured(e bench.HistoryEntry) int {
	n := 0
	for _, c := range e.Cells {
		if c.Status == bench.CellMeasured {
			n++
		}
	}
	return n
}

// problemSummary is the first problem and how many more.
func problemSummary(ps []string) string {
	switch len(ps) {
	case 0:
		return ""
	case 1:
		return ps[0]
	}
	return fmt.Sprintf("%s (+%d more)", ps[0], len(ps)-1)
}

// historyLeftOut says what the list left out: runs past the server's
// bound on one answer, and stored runs it could not read (each removable
// by its id), nil when nothing.
func (v *BenchView) historyLeftOut() app.UI {
	if !v.historyTruncated && len(v.historyProblems) == 0 {
		return nil
	}
	ps := v.historyProblems
	return app.Div().Class("left-out").Body(
		app.If(v.historyTruncated, func() app.UI {
			return app.P().Class("note").DataSet("history", "truncated").Text(fmt.Sprintf(
				"Listed: the newest %s; the list reached the server's bound on one answer (%s) and older runs are left out.",
				plural.Count(len(v.history), "run", "runs"), format.Bytes(bench.MaxListBytes)))
		}),
		app.If(len(ps) > 0, func() app.UI {
			return app.Div().DataSet("history", "unreadable").Body(
				app.P().Class("bad").Text(unreadableCount(len(ps))+
					" could not be read (DELETE /api/metrics/history/ID removes one):"),
				app.Ul().Class("problems").Body(app.Range(ps).Slice(func(i int) app.UI {
					return app.Li().Text(ps[i].ID + ": " + ps[i].Message)
				})),
			)
		}),
	)
}

// unreadableCount says how many stored runs a list could not read: at its
// bound, at least that many.
func unreadableCount(n int) string {
	if n >= bench.MaxListProblems {
		return fmt.Sprintf("%d or more stored runs", n)
	}
	return plural.Count(n, "stored run", "stored runs")
}

func (v *BenchView) renderHistory() app.UI {
	if v.historyErr != "" && v.historyAt.IsZero() {
		return section("History", staleAlert("History", "history", v.historyErr, v.historyAt))
	}
	if v.historyAt.IsZero() {
		return section("History", loading("history"))
	}
	var alert app.UI
	if v.historyErr != "" {
		alert = staleAlert("History", "history", v.historyErr, v.historyAt)
	}
	left := v.historyLeftOut()
	if len(v.history) == 0 {
		return section("History", alert, left, empty("No finished runs yet."))
	}
	hs := v.history
	return section("History", alert, left, app.Div().Class("table-wrap").Body(app.Table().Class("table history").Body(
		app.THead().Body(app.Tr().Body(th("Profile"), th("When"), thNum("Duration"), th("Complete"), thNum("Cells measured"), thNum("Best decode"), th("Problems"), th(""))),
		app.TBody().Body(app.Range(hs).Slice(func(i int) app.UI {
			e := hs[i]
			complete := "yes"
			if !e.Complete {
				complete = fmt.Sprintf("no (exit %d)", e.ExitCode)
			}
			// A run that did not complete has no best figure: what it
			// measured is not comparable with a whole run.
			best := format.Dash
			if e.Complete {
				best = format.RatePtr(bestDecode(e))
			}
			// The labels name the cells where the table stacks (a phone).
			return app.Tr().DataSet("run", e.ID).DataSet("complete", fmt.Sprint(e.Complete)).Body(
				app.Td().Class("run-profile").Text(e.Profile),
				app.Td().Class("when").Text(format.When(e.StartedAt)),
				app.Td().Class("num").DataSet("label", "Duration").Text(format.Ms(float64(e.DurationMs))),
				app.Td().Class(map[bool]string{true: "ok", false: "bad"}[e.Complete]).DataSet("label", "Complete").Text(complete),
				app.Td().Class("num").DataSet("label", "Cells measured").Text(fmt.Sprintf("%d / %d", measured(e), len(e.Cells))),
				app.Td().Class("num").DataSet("label", "Best decode").Text(best),
				app.Td().Class("reason").DataSet("label", "Problems").Text(problemSummary(e.Problems)),
				app.Td().Class("actions").Body(app.Button().Class("btn").DataSet("action", "open").Text("Details").
					OnClick(func(ctx app.Context, ev app.Event) { v.open(ctx, e.ID) }, app.EventScope(e.ID))),
			)
		})),
	)))
}
