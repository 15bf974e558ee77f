package ui

import (
	"fmt"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// renderHeadToHeads is a run's head-to-heads (bench.HeadToHeads, worked
// out here from its cells, as report.md and `bench show` do): per pair its
// combined verdict, the parity probes' verdicts and a row per figure both
// cells measured. Nothing for a run without a pair.
func renderHeadToHeads(e *bench.HistoryEntry) app.UI {
	hs := bench.HeadToHeads(e.Cells, bench.HeadToHeadThreshold)
	if len(hs) == 0 {
		return app.Text("")
	}
	return app.Div().Class("head-to-head").Body(
		app.H3().Text("Head to head"),
		app.P().Class("note").Text(fmt.Sprintf("Each candidate (tree) against its model's reference, sent the same requests; a verdict is the candidate's. Threshold %.0f %%: %s.",
			100*bench.HeadToHeadThreshold, bench.CompareRule)),
		app.Range(hs).Slice(func(i int) app.UI { return headToHead(hs[i]) }),
	)
}

// headToHead is one pair: its title with the combined verdict, its parity
// and the figures' table.
func headToHead(h bench.HeadToHead) app.UI {
	ps, fs := h.Parity, h.Figures
	word := bench.ParityWord(ps)
	return app.Div().Class("pair").DataSet("pair", h.CandidateCell.Key).Body(
		app.H4().Body(modelName(h.CandidateCell.Key), app.Text(" against "), modelName(h.ReferenceCell.Key), app.Text(": "),
			app.Span().Class(verdictClass(h.Verdict)).DataSet("verdict", h.Verdict).Text(h.Verdict)),
		app.P().Class("parity").DataSet("parity", word).Body(app.Text("Parity: "),
			app.Span().Class(parityClass(firstDrift(ps))).Text(word)),
		app.If(len(ps) > 0, func() app.UI {
			return app.Ul().Class("probes").Body(app.Range(ps).Slice(func(i int) app.UI {
				p := ps[i]
				return app.Li().DataSet("probe", p.Kind).Body(app.Text(p.Kind+" probe: "),
					app.Span().Class(parityClass(p.Verdict)).Text(p.Verdict), app.Text(" ("+p.Detail+")"))
			}))
		}),
		app.If(len(fs) == 0, func() app.UI {
			return app.P().Class("empty").Text("No figure was measured in both.")
		}).Else(func() app.UI {
			return app.Div().Class("table-wrap").Body(app.Table().Class("table pair-figures").Body(
				app.THead().Body(app.Tr().Body(th("Figure"), thNum("Candidate"), thNum("Reference"), thNum("Candidate / reference"), th("Verdict"))),
				app.TBody().Body(app.Range(fs).Slice(func(i int) app.UI { return pairFigure(fs[i]) })),
			))
		}),
	)
}

// pairFigure is a figure's row: both medians in the figure's unit (as the
// cells' table shows them), their ratio and the compare rule's verdict,
// with why a change over the threshold is judged the same. The labels
// name the cells where the table stacks (a phone).
func pairFigure(f bench.PairFigure) app.UI {
	c, r := f.Candidate, f.Reference
	ratio := format.Dash
	if r != 0 {
		ratio = fmt.Sprintf("%.2f", c/r)
	}
	return app.Tr().DataSet("figure", f.Key).Body(
		app.Td().Class("figure-name").Text(figureHeader(f.Figure)),
		app.Td().Class("num").DataSet("label", "Candidate").Text(figureValue(f.Figure, &c)),
		app.Td().Class("num").DataSet("label", "Reference").Text(figureValue(f.Figure, &r)),
		app.Td().Class("num").DataSet("label", "Candidate / reference").Text(ratio),
		app.Td().Class("verdict").Body(app.Span().Class(verdictClass(f.Verdict)).Text(f.Verdict),
			app.If(f.Why != "", func() app.UI { return app.Span().Class("muted").Text(" (" + f.Why + ")") })),
	)
}

// verdictClass colours a verdict: the candidate better (faster, less
// memory) or worse, mixed, or the same.
func verdictClass(v string) string {
	switch v {
	case bench.VerdictFaster, bench.VerdictLess:
		return "ok"
	case bench.VerdictSlower, bench.VerdictMore:
		return "bad"
	case bench.VerdictMixed:
		return "warn"
	}
	return "muted"
}

// parityClass colours a parity verdict: parity, unknown, or a drift or
// divergence, which makes the speeds' comparison one of unlike work.
func parityClass(v string) string {
	switch v {
	case bench.ParityEqual:
		return "ok"
	case bench.ParityUnknown:
		return "muted"
	}
	return "warn"
}

// firstDrift is the verdict bench.ParityWord names: the first kind's that
// is not parity; parity when every kind's is, unknown when none was
// probed.
func firstDrift(vs []bench.ParityVerdict) string {
	if len(vs) == 0 {
		return bench.ParityUnknown
	}
	for _, v := range vs {
		if v.Verdict != bench.ParityEqual {
			return v.Verdict
		}
	}
	return bench.ParityEqual
}
