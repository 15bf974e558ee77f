package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/api"
	"github.com/mlx-bun/mlx-metrics/panel/charts"
	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/plural"
)

// HistoryLimit is how many finished runs the view lists and trends.
const HistoryLimit = 50

// requestTimeout bounds each call to the bench routes.
const requestTimeout = 10 * time.Second

// BenchView runs bench-serve and shows its history. It talks to the bench
// routes itself, so their failure shows here and nowhere else.
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

// jobStreamRetry is how long the view polls after the job stream dropped
// before it opens the stream again.
const jobStreamRetry = 5 * time.Second

// follow follows the jobs over GET /bench's event stream, so a run's
// progress arrives as it happens and an idle view costs no requests. Where
// the stream cannot open it polls; when the stream drops it polls for
// jobStreamRetry, then opens it again.
func (v *BenchView) follow(ctx app.Context) {
	if v.Poll <= 0 || v.jobStream != nil || v.hidden {
		return
	}
	v.gen++
	gen, base := v.gen, v.API
	v.jobStream = openStream(base+"/bench", "jobs",
		func(data string) {
			var l bench.JobList
			err := json.Unmarshal([]byte(data), &l)
			ctx.Dispatch(func(ctx app.Context) {
				if gen != v.gen || base != v.API || err != nil {
					return
				}
				v.applyJobs(ctx, l)
			})
		},
		func() {
			ctx.Dispatch(func(ctx app.Context) {
				if gen != v.gen {
					return
				}
				v.closeJobStream()
				v.poll(ctx, time.Now().Add(jobStreamRetry))
			})
		})
	if !v.jobStream.open() {
		v.jobStream = nil
		v.poll(ctx, time.Time{})
	}
}

// poll refreshes jobs every Poll, the next poll once the last one
// answered, so a slow backend never has requests piling up; from until on
// (when not zero) it goes back to the stream. The chain ends with the view
// (go-app runs no dispatch for a dismounted component) and when the
// connection changed or a stream opened since (gen), so chains never pile up.
func (v *BenchView) poll(ctx app.Context, until time.Time) {
	gen := v.gen
	ctx.After(v.Poll, func(ctx app.Context) {
		if gen != v.gen {
			return
		}
		v.refresh(ctx, false, func(ctx app.Context) {
			if gen != v.gen {
				return
			}
			if !until.IsZero() && !time.Now().Before(until) {
				v.follow(ctx)
				return
			}
			v.poll(ctx, until)
		})
	})
}

// applyJobs shows a job list from the stream, and fetches profiles and
// history again when a job finished since the last look.
func (v *BenchView) applyJobs(ctx app.Context, l bench.JobList) {
	finished := countFinished(l)
	v.jobs, v.jobsErr, v.jobsAt = l, "", time.Now()
	v.tick(ctx)
	if finished != v.finished {
		v.refresh(ctx, true, nil)
	}
}

// tick re-renders the view a second from now while a job runs, so that
// its elapsed time moves between the job's own updates (which come when
// its progress or log does). One is scheduled at a time; the chain ends
// when no job runs, while the page is hidden (showing it refreshes, which
// ticks again), and with the view (go-app runs no callback of a dismounted
// component). Like polling, it is off with Poll zero.
func (v *BenchView) tick(ctx app.Context) {
	if v.ticking || v.Poll <= 0 || v.hidden || !v.running() { // Poll zero: no timed updates (tests)
		return
	}
	v.ticking = true
	ctx.After(time.Second, func(ctx app.Context) {
		v.ticking = false
		v.tick(ctx)
	})
}

// running reports whether a job holds the GPU.
func (v *BenchView) running() bool {
	j := v.activeJob()
	return j != nil && j.Status == bench.StatusRunning
}

func countFinished(l bench.JobList) int {
	n := 0
	for _, j := range l.Jobs {
		if j.Status != bench.StatusRunning && j.Status != bench.StatusQueued {
			n++
		}
	}
	return n
}

// benchData is one refresh's answers.
type benchData struct {
	jobs                    bench.JobList
	jobsErr                 error
	finished                int
	fetched                 bool // profiles and history were fetched
	profiles                []bench.Profile
	history                 bench.HistoryList
	profilesErr, historyErr error
}

// fetchBench fetches jobs, and profiles and history when all is set or a
// job finished since the last look (knownFinished), within timeout.
func fetchBench(c *api.Client, all bool, knownFinished int, timeout time.Duration) benchData {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var d benchData
	d.jobs, d.jobsErr = c.Jobs(ctx)
	d.finished = countFinished(d.jobs)
	if all || d.finished != knownFinished {
		d.fetched = true
		d.profiles, d.profilesErr = c.Profiles(ctx)
		d.history, d.historyErr = c.History(ctx, HistoryLimit)
	}
	return d
}

// apply shows a refresh's answers.
// apply shows a refresh's answers. A route that fails after it answered
// leaves its last answer on screen, greyed, with why (as the live views
// keep their figures when the stream is lost); one that never answered
// says why in its place.
func (v *BenchView) apply(d benchData) {
	v.jobsErr = errText(d.jobsErr)
	if d.jobsErr == nil {
		v.jobs, v.jobsAt, v.finished = d.jobs, time.Now(), d.finished
	}
	if d.fetched {
		v.profilesErr, v.historyErr = errText(d.profilesErr), errText(d.historyErr)
		if d.profilesErr == nil {
			v.profiles, v.profilesAt = d.profiles, time.Now()
		}
		if d.historyErr == nil {
			v.history, v.historyAt = d.history.Entries, time.Now()
			v.historyProblems, v.historyTruncated = d.history.Problems, d.history.Truncated
		}
		if v.trendProfile == "" && len(d.history.Entries) > 0 {
			v.trendProfile = d.history.Entries[0].Profile
		}
	}
}

// Stale reports whether a route failed and its last answer is shown.
func (v *BenchView) Stale() bool {
	return v.jobsErr != "" && !v.jobsAt.IsZero() || v.profilesErr != "" && !v.profilesAt.IsZero() ||
		v.historyErr != "" && !v.historyAt.IsZero()
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

// refresh fetches in the background, shows the answers, then calls then
// (when not nil).
func (v *BenchView) refresh(ctx app.Context, all bool, then func(app.Context)) {
	c, known := v.client(), v.finished
	v.fetchedFrom = v.API
	ctx.Async(func() {
		d := fetchBench(c, all, known, requestTimeout)
		ctx.Dispatch(func(ctx app.Context) {
			// Answers for a connection the view has left are dropped.
			if c.Base == v.API {
				v.apply(d)
				v.tick(ctx)
			}
			if then != nil {
				then(ctx)
			}
		})
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (v *BenchView) run(ctx app.Context, profile string) {
	v.act(ctx, func(cctx context.Context, c *api.Client) error {
		_, err := c.Start(cctx, profile)
		return err
	})
}

func (v *BenchView) cancel(ctx app.Context, id string) {
	v.act(ctx, func(cctx context.Context, c *api.Client) error {
		_, err := c.Cancel(cctx, id)
		return err
	})
}

// act runs a button's call in the background, the buttons busy meanwhile,
// then shows its error, if any, and refreshes the jobs.
func (v *BenchView) act(ctx app.Context, call func(context.Context, *api.Client) error) {
	v.busy, v.actionErr = true, ""
	c := v.client()
	ctx.Async(func() {
		cctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		err := call(cctx, c)
		ctx.Dispatch(func(ctx app.Context) {
			v.busy, v.actionErr = false, errText(err)
			v.refresh(ctx, false, nil)
		})
	})
}

func (v *BenchView) open(ctx app.Context, id string) {
	c := v.client()
	ctx.Async(func() {
		cctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		e, err := c.Entry(cctx, id)
		ctx.Dispatch(func(ctx app.Context) {
			v.detailErr = errText(err)
			if err == nil {
				v.detail = &e
			}
		})
	})
}

// activeJob is the job holding or waiting for the GPU, if any.
func (v *BenchView) activeJob() *bench.Job {
	for i := range v.jobs.Jobs {
		if j := &v.jobs.Jobs[i]; j.Status == bench.StatusRunning {
			return j
		}
	}
	for i := range v.jobs.Jobs {
		if j := &v.jobs.Jobs[i]; j.Status == bench.StatusQueued {
			return j
		}
	}
	return nil
}

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
					app.Td().Text(orDash(p.Scope)), // none when the plan does not load
					app.Td().Body(modelName(models)),
					tdNum(itoa(p.Cells)),
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

func (v *BenchView) renderActive() app.UI {
	if v.jobsErr != "" && v.jobsAt.IsZero() {
		return section("Running", staleAlert("Jobs", "jobs", v.jobsErr, v.jobsAt))
	}
	if v.jobsAt.IsZero() {
		return section("Running", loading("jobs"))
	}
	var alert app.UI
	if v.jobsErr != "" {
		alert = staleAlert("Jobs", "jobs", v.jobsErr, v.jobsAt)
	}
	j := v.activeJob()
	if j == nil {
		return section("Running", alert, empty("No run in progress."), v.renderLastEnded())
	}
	pct := math.Max(0, math.Min(1, j.Progress)) * 100
	status := j.Status
	if j.Status == bench.StatusQueued && j.Position > 0 {
		status = fmt.Sprintf("queued (position %d)", j.Position)
	}
	return section("Running", alert,
		app.Div().Class("job").DataSet("job", j.ID).DataSet("status", j.Status).Body(
			app.Div().Class("job-head").Body(
				app.Strong().Text(j.Profile),
				app.Span().Class("muted").Text(" "+j.ID+" · "+status),
				app.Button().Class("btn btn-danger").DataSet("action", "cancel").Disabled(v.busy).Text("Cancel").
					OnClick(func(ctx app.Context, e app.Event) { v.cancel(ctx, j.ID) }, app.EventScope(j.ID)),
			),
			app.Div().Class("progress").Attr("role", "progressbar").
				Aria("valuemin", "0").Aria("valuemax", "100").Aria("valuenow", fmt.Sprintf("%.0f", pct)).Body(
				app.Div().Class("progress-fill").Style("width", fmt.Sprintf("%.1f%%", pct)),
			),
			app.P().Class("job-stage").Text(fmt.Sprintf("%.0f%% · %s %s", pct, j.Stage, j.Message)),
			app.P().Class("job-time").DataSet("timing", "job").Text(v.jobTiming(j)),
			app.If(len(j.LogTail) > 0, func() app.UI {
				return logTail(j.LogTail)
			}),
		),
	)
}

// renderLastEnded shows the newest job when it failed or was cancelled:
// such a run may leave no history entry, and its reason must not vanish.
func (v *BenchView) renderLastEnded() app.UI {
	if len(v.jobs.Jobs) == 0 {
		return app.Text("")
	}
	j := v.jobs.Jobs[0]
	if j.Status != bench.StatusFailed && j.Status != bench.StatusCancelled {
		return app.Text("")
	}
	why := j.Error
	if why == "" {
		why = j.Message
	}
	return app.Div().Class("job job-ended").DataSet("job", j.ID).DataSet("status", j.Status).Body(
		app.P().Body(
			app.Strong().Text(j.Profile),
			app.Span().Class("muted").Text(" "+j.ID+" · "+j.Status+" at "+format.Clock(j.FinishedAt)),
		),
		app.If(why != "", func() app.UI {
			class := "error-text"
			if j.Status == bench.StatusCancelled {
				class = "muted"
			}
			return app.P().Class(class).Text(why)
		}),
		app.If(len(j.LogTail) > 0, func() app.UI {
			return app.Details().Body(app.Summary().Text("log tail"), logTail(j.LogTail))
		}),
	)
}

// loading stands where a route's answer will be until its first answer
// (or its failure): saying "none" before the backend answered would be a
// claim. The browser may hold a request back a while, e.g. when other tabs
// use up its connections to the backend.
func loading(what string) app.UI {
	return app.P().Class("empty").DataSet("loading", what).Text("Loading " + what + "…")
}

// logTail shows the job's last lines; the box is anchored at its bottom
// (column-reverse), so the newest line is the one in view.
func logTail(lines []string) app.UI {
	return app.Div().Class("log").Body(app.Pre().Text(strings.Join(lines, "\n")))
}

// jobTiming is a running job's elapsed time and, once a tenth is done, an
// estimate of what is left (elapsed × the share still to do over the share
// done: the plan's phases are of similar length, but its first moments,
// starting the server and warming up, are not, so an earlier estimate
// would mislead). Under a second left, none is given.
func (v *BenchView) jobTiming(j *bench.Job) string {
	if j.StartedAt == 0 {
		return "not started"
	}
	var clk clock.Clock = clock.Real{}
	if v.clock != nil {
		clk = v.clock
	}
	elapsed := clk.Now().Sub(time.UnixMilli(j.StartedAt)).Round(time.Second)
	if elapsed < 0 {
		elapsed = 0
	}
	out := "elapsed " + format.Whole(elapsed)
	if p := j.Progress; p >= minProgressForEstimate && p < 1 {
		if left := time.Duration(float64(elapsed) * (1 - p) / p).Round(time.Second); left >= time.Second {
			out += " · about " + format.Whole(left) + " left"
		}
	}
	return out
}

// minProgressForEstimate is the share done from which jobTiming estimates
// the time left.
const minProgressForEstimate = 0.1

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
			return app.Tr().DataSet("run", e.ID).DataSet("complete", fmt.Sprint(e.Complete)).Body(
				app.Td().Text(e.Profile),
				app.Td().Class("when").Text(format.When(e.StartedAt)),
				tdNum(format.Ms(float64(e.DurationMs))),
				app.Td().Class(map[bool]string{true: "ok", false: "bad"}[e.Complete]).Text(complete),
				tdNum(fmt.Sprintf("%d / %d", measured(e), len(e.Cells))),
				tdNum(best),
				app.Td().Class("reason").Text(problemSummary(e.Problems)),
				app.Td().Body(app.Button().Class("btn").DataSet("action", "open").Text("Details").
					OnClick(func(ctx app.Context, ev app.Event) { v.open(ctx, e.ID) }, app.EventScope(e.ID))),
			)
		})),
	)))
}

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
		&Chart{ID: "chart-trend", Label: "trend of " + f.Name, Option: charts.Trend(v.history, v.trendProfile, f, v.withIncomplete, v.Palette)},
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
