package ui

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/plural"
)

// loadColumns are the points table's headers.
var loadColumns = []string{"Offered", "Achieved", "Output", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99",
	"E2EL p50", "Errors", "Goodput", "Saturated", "Requests"}

// loadSummary is what a run measured of a cell's load: its SLO, the max
// rate found, a row per point (in the order measured, each repeat its
// own row) and the points as CSV.
func loadSummary(r LoadRun) app.UI {
	c := r.Cell
	pts := c.LoadPoints
	title := "Points"
	if r.Label != "" {
		title = r.Label + ": " + r.RunID
	}
	return app.Div().Class("load-run").DataSet("run", r.RunID).Body(
		app.H4().Text(title),
		app.P().Class("note").Text(sloText(c.SLO)),
		app.If(c.MaxRate != nil, func() app.UI {
			return app.P().Class("max-rate").Text(maxRateText(*c.MaxRate))
		}),
		scrollTable("load-points", loadColumns, app.Range(pts).Slice(func(i int) app.UI {
			return loadRow(pts[i], r.Requests)
		})),
		app.P().Class("note").Body(
			app.A().Href(csvDataURL(loadCSV(r.RunID, c))).Attr("download", loadCSVName(r.RunID, c.Key)).
				DataSet("csv", "points").Text("points as CSV"),
		),
	)
}

// loadRow is a point's row; requests, when set, is where its requests
// file is served, linked as CSV.
func loadRow(p bench.LoadPoint, requests string) app.UI {
	bad := func(b bool) string {
		if b {
			return "num bad"
		}
		return "num"
	}
	goodput := format.Dash
	if p.Goodput != nil {
		goodput = format.Requests(*p.Goodput)
	}
	saturated := "no"
	if p.Saturated {
		saturated = "yes"
	}
	return app.Tr().DataSet("point", fmt.Sprintf("%d.%d", p.Point, p.Repeat)).Body(
		app.Td().Text(offered(p)),
		tdNum(format.Requests(p.RequestThroughput)),
		tdNum(format.Rate(p.OutputThroughput)),
		tdNum(distMs(p.TTFT, p.TTFT.Median)), tdNum(distMs(p.TTFT, p.TTFT.P99)),
		tdNum(distMs(p.TPOT, p.TPOT.Median)), tdNum(distMs(p.TPOT, p.TPOT.P99)),
		tdNum(distMs(p.E2EL, p.E2EL.Median)),
		app.Td().Class(bad(p.Errors > 0)).Text(itoa(p.Errors)),
		tdNum(goodput),
		app.Td().Class(bad(p.Saturated)).Text(saturated),
		app.Td().Class("num").Body(app.If(requests != "" && p.RequestsFile != "", func() app.UI {
			return app.A().Href(requests+url.PathEscape(strings.TrimPrefix(p.RequestsFile, "requests/"))+"?format=csv").
				Attr("download", "").DataSet("csv", "requests").Text("CSV")
		})),
	)
}

// offered says the load a point offered: a rate (and its cap on requests
// in flight) or a closed loop's concurrency, with its repeat and the
// search step that chose it.
func offered(p bench.LoadPoint) string {
	var s string
	switch {
	case p.OfferedRate > 0 && p.Concurrency > 0:
		s = fmt.Sprintf("%s (cap %d)", format.Requests(p.OfferedRate), p.Concurrency)
	case p.OfferedRate > 0:
		s = format.Requests(p.OfferedRate)
	default:
		s = fmt.Sprintf("%d concurrent", p.Concurrency)
	}
	if p.Repeat > 1 {
		s += fmt.Sprintf(" · repeat %d", p.Repeat)
	}
	if p.Search != "" {
		s += " · " + p.Search
	}
	return s
}

// distMs is v of d in ms, or a dash when no request reported d.
func distMs(d bench.Dist, v float64) string {
	if d.Count == 0 {
		return format.Dash
	}
	return format.Ms(v)
}

// sloText says the plan's SLO, which goodput counts against.
func sloText(s *bench.SLO) string {
	if s == nil || *s == (bench.SLO{}) {
		return "No SLO in the plan: no goodput, no SLO lines."
	}
	var bounds []string
	for _, b := range []struct {
		name string
		ms   float64
	}{{"TTFT", s.TTFTMs}, {"TPOT", s.TPOTMs}, {"E2EL", s.E2ELMs}} {
		if b.ms > 0 {
			bounds = append(bounds, b.name+" ≤ "+format.Ms(b.ms))
		}
	}
	return "SLO: " + strings.Join(bounds, ", ") + " (goodput counts the requests meeting every bound)"
}

// maxRateText says what the search for the highest rate found.
func maxRateText(m bench.MaxRate) string {
	found := "none passed"
	if m.Rate > 0 {
		found = format.Requests(m.Rate)
	}
	s := "Max rate found: " + found
	if m.FailedAt > 0 {
		s += "; failed at " + format.Requests(m.FailedAt)
	}
	s += fmt.Sprintf(" (a rate passes when its goodput is at least %s of it and the server kept up; %s)",
		format.Percent(m.MinShare), plural.Count(m.Points, "point", "points"))
	if m.Note != "" {
		s += ": " + m.Note
	}
	return s
}
