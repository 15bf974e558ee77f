package ui

import (
	"fmt"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/api"
	"github.com/mlx-bun/mlx-metrics/panel/charts"
	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// HistoryLimit is how many finished runs the view lists and trends.
const HistoryLimit = 50

// requestTimeout bounds each call to the bench routes.
const requestTimeout = 10 * time.Second

// BenchView runs bench-serve and shows its history. It talks to the bench
// routes itself, so their failure shows here and nowhere else. Its parts
// live in files of their own: bench_fetch.go (calls to the routes and
// their answers), bench_follow.go (the jobs' stream, polling and the
// clock's tick), bench_profiles.go (the plans and Run), bench_job.go (the
// running job and the last one that ended), bench_history.go (the list of
// runs), bench_run.go (one run's detail) with bench_pairs.go (its
// head-to-heads), bench_compare.go with bench_curves.go,
// bench_load_table.go and bench_load_csv.go (a run's load sweeps, alone or
// over another run's) and bench_trend.go (a figure across runs).
type BenchView struct {
	app.Compo

	// API is the API root the routes hang off (connection.apiBase).
	API string
	// Token is sent as the bearer token of starts and cancels.
	Token   string
	Palette charts.Palette
	// Poll is how often jobs are refreshed while the view is open and the
	// job stream is not (no EventSource, or the stream dropped and waits
	// to reconnect); zero refreshes only on mount and after an action
	// (tests).
	Poll time.Duration

	profiles    []bench.Profile
	profilesErr string
	jobs        bench.JobList
	jobsErr     string
	history     []bench.HistoryEntry
	historyErr  string
	// historyProblems are the stored runs the list could not read;
	// historyTruncated says it stopped at the server's bound on one answer.
	historyProblems  []bench.HistoryProblem
	historyTruncated bool
	// When each was last answered (zero: never), so a failure after it
	// keeps the answer on screen.
	profilesAt, jobsAt, historyAt time.Time
	// finished counts jobs no longer running at the last refresh; when it
	// moves, history is fetched again.
	finished int
	// fetchedFrom is the API the last refresh asked.
	fetchedFrom string

	detail    *bench.HistoryEntry
	detailErr string
	// compareID is the listed run whose load curves are drawn over the
	// open run's (bench_compare.go), "" for none.
	compareID string

	trendProfile string
	figure       int
	// withIncomplete puts runs that did not complete in the trend too.
	withIncomplete bool
	actionErr      string
	busy           bool
	// clock tells elapsed and remaining time (clock.Real when nil).
	clock clock.Clock
	// jobStream follows GET /bench as a stream while it is open; gen tells
	// its callbacks from those of a stream closed since.
	jobStream *stream
	gen       int
	// ticking is true while a second's re-render of the running job's
	// timing is scheduled.
	ticking bool
	// hidden is true while the page is hidden: the view neither follows
	// nor polls then (see watchVisibility); unwatch stops watching.
	hidden  bool
	unwatch func()
}

func (v *BenchView) client() *api.Client { return &api.Client{Base: v.API, Token: v.Token} }

func (v *BenchView) OnMount(ctx app.Context) {
	v.hidden = pageHidden()
	v.unwatch = watchVisibility(ctx, v.setHidden)
	v.refresh(ctx, true, v.follow)
}

// setHidden stops following the jobs while the page is hidden, and
// refreshes and follows them again when it shows.
func (v *BenchView) setHidden(ctx app.Context, hidden bool) {
	if hidden == v.hidden {
		return
	}
	v.hidden = hidden
	v.closeJobStream() // ends a poll chain too (gen)
	if !hidden {
		v.refresh(ctx, true, v.follow)
	}
}

// OnUpdate refetches everything when the connection changed (the parent
// also updates the view for a new palette, which needs no fetch).
func (v *BenchView) OnUpdate(ctx app.Context) {
	if v.API != v.fetchedFrom {
		v.closeJobStream()
		v.refresh(ctx, true, v.follow)
	}
}

func (v *BenchView) OnDismount() {
	v.closeJobStream()
	if v.unwatch != nil {
		v.unwatch()
	}
}

func (v *BenchView) closeJobStream() {
	v.gen++
	v.jobStream.close()
	v.jobStream = nil
}

func (v *BenchView) Render() app.UI {
	// data-jobs says how jobs arrive (stream or poll; paused while the page
	// is hidden), for the browser tests.
	source := "poll"
	switch {
	case v.hidden:
		source = "paused"
	case v.jobStream != nil:
		source = "stream"
	}
	class := "view bench"
	if v.Stale() {
		class += " stale"
	}
	return app.Div().Class(class).ID("view-bench").DataSet("jobs", source).DataSet("stale", fmt.Sprint(v.Stale())).Body(
		app.If(v.actionErr != "", func() app.UI {
			return app.P().Class("alert").DataSet("error", "action").Text(v.actionErr)
		}),
		v.renderProfiles(),
		v.renderActive(),
		v.renderHistory(),
		v.renderDetail(),
		v.renderTrend(),
	)
}

// staleAlert says a route failed and, when its last answer is kept, as of
// when the section shows it.
func staleAlert(what, key, err string, at time.Time) app.UI {
	msg := what + " unavailable: " + err
	if !at.IsZero() {
		msg += "; shown as of " + format.Clock(at.UnixMilli())
	}
	return app.P().Class("alert").DataSet("error", key).Text(msg)
}

// loading stands where a route's answer will be until its first answer
// (or its failure): saying "none" before the backend answered would be a
// claim. The browser may hold a request back a while, e.g. when other tabs
// use up its connections to the backend.
func loading(what string) app.UI {
	return app.P().Class("empty").DataSet("loading", what).Text("Loading " + what + "…")
}
