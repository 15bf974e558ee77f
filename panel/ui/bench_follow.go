package ui

import (
	"encoding/json"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

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
