package ui

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

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
	status := string(j.Status)
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
			app.Span().Class("muted").Text(" "+j.ID+" · "+string(j.Status)+" at "+format.Clock(j.FinishedAt)),
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
