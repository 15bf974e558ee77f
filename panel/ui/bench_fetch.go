package ui

import (
	"context"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/api"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

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
