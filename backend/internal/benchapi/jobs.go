package benchapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/jobs"
	"github.com/mlx-bun/mlx-metrics/backend/internal/profiles"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/backend/internal/stream"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/strictjson"
)

func (a *API) listProfiles(c *fiber.Ctx) error {
	ps, err := a.profiles.List()
	if err != nil {
		return a.storageError(c, "list the profiles", err)
	}
	return c.JSON(bench.ProfileList{Profiles: ps})
}

// errNoProfile is decodeStart's answer for a body that names no profile.
var errNoProfile = errors.New("missing profile")

// decodeStart is the profile name POST /bench's body names, or why the
// body is not a JSON object naming one, in a message that quotes a bounded
// part of it; errNoProfile when "profile" is missing, not text or empty.
// As the original, only "profile" is read, by its exact name, and other
// fields are ignored: a plan holds commands, so the API never takes one,
// and one sent beside the name changes nothing. The name itself is
// checked by profiles.
func decodeStart(body []byte) (string, error) {
	var fields map[string]json.RawMessage
	if err := strictjson.Decode(body, &fields, false); errors.Is(err, strictjson.ErrTrailing) {
		return "", errors.New(`POST /bench takes one JSON object {"profile": "<name>"}, and nothing after it`)
	} else if err != nil {
		return "", fmt.Errorf(`POST /bench takes a JSON object {"profile": "<name>"}: %s`, capEcho(err.Error()))
	}
	if fields == nil {
		return "", errors.New(`POST /bench takes a JSON object {"profile": "<name>"}, not null`)
	}
	var name string
	if err := json.Unmarshal(fields["profile"], &name); err != nil || name == "" {
		return "", errNoProfile
	}
	return name, nil
}

func (a *API) start(c *fiber.Ctx) error {
	name, err := decodeStart(c.Body())
	switch {
	case errors.Is(err, errNoProfile):
		return server.Error(c, fiber.StatusBadRequest,
			`missing profile: POST /bench takes {"profile": "<name>"} naming a plan in `+profiles.ShownDir+
				" (GET /api/metrics/bench/profiles lists them); "+a.profiles.HowToCreate(""))
	case err != nil:
		return server.Error(c, fiber.StatusBadRequest, err.Error())
	}
	plan, err := a.profiles.Load(name)
	switch {
	case errors.Is(err, profiles.ErrBadName):
		return server.Error(c, fiber.StatusBadRequest,
			err.Error()+"; it resolves to "+profiles.ShownFile("<name>")+" and nothing else; "+a.profiles.HowToCreate(""))
	case errors.Is(err, profiles.ErrNotFound):
		return server.Error(c, fiber.StatusBadRequest, err.Error()+"; "+a.profiles.HowToCreate(name))
	case errors.Is(err, profiles.ErrInvalid):
		return server.Error(c, fiber.StatusBadRequest,
			err.Error()+"; fix "+profiles.ShownFile(name)+" or write it again with `mlx-metrics bench plan --out "+profiles.ShownFile(name)+"`")
	case err != nil:
		return a.storageError(c, fmt.Sprintf("read profile %q", name), err)
	}
	j, err := a.jobs.Submit(name, plan)
	switch {
	case errors.Is(err, jobs.ErrQueueFull):
		return server.Error(c, fiber.StatusConflict, err.Error())
	case errors.Is(err, jobs.ErrClosed):
		return server.Error(c, fiber.StatusServiceUnavailable, err.Error()+"; start the run again once it is back")
	}
	if err != nil {
		return a.storageError(c, fmt.Sprintf("start a run of profile %q", name), err)
	}
	c.Location(c.BaseURL() + c.Path() + "/" + j.ID)
	return c.Status(fiber.StatusAccepted).JSON(j.View())
}

var statuses = map[bench.JobStatus]bool{
	bench.StatusQueued: true, bench.StatusRunning: true, bench.StatusDone: true,
	bench.StatusFailed: true, bench.StatusCancelled: true,
}

func (a *API) listJobs(c *fiber.Ctx) error {
	status := bench.JobStatus(c.Query("status"))
	if status != "" && !statuses[status] {
		return server.Error(c, fiber.StatusBadRequest,
			fmt.Sprintf("status %q is not one of queued, running, done, failed, cancelled", capEcho(string(status))))
	}
	limit, err := parseLimit(c.Query("limit"), DefaultJobLimit, MaxJobLimit)
	if err != nil {
		return server.Error(c, fiber.StatusBadRequest, err.Error())
	}
	f := jobs.Filter{Kind: bench.JobKind, Status: status, Limit: limit}
	if acceptsEventStream(c) {
		return a.streamJobs(c, f)
	}
	return c.JSON(a.jobList(f))
}

func (a *API) jobList(f jobs.Filter) bench.JobList {
	return bench.JobList{Jobs: a.jobs.List(f), Lease: a.lease.State()}
}

// MaxJobStreams bounds the clients following the jobs as streams at once,
// GET /bench and every job's GET /bench/:id/events together (a panel tab
// follows one or two); one more is answered 503.
const MaxJobStreams = 256

// jobsFrameInterval spaces the job list's frames: a running job changes at
// every line its runner writes, and a follower needs no more than this.
const jobsFrameInterval = 500 * time.Millisecond

// followStream counts a new stream follower and serves it with serve on
// a hijacked connection, handing it the keep-alive ticks (every
// stream.DefaultKeepAlive); or it answers 503 when MaxJobStreams follow
// already. Each follower holds a connection and a goroutine: their number
// is bounded, so a flood of followers cannot grow memory, and one that
// stops reading is dropped after Options.StreamWriteTimeout.
func (a *API) followStream(c *fiber.Ctx, instead string, serve func(w *stream.Writer, keepalive <-chan time.Time)) {
	if a.jobStreams.Add(1) > MaxJobStreams {
		a.jobStreams.Add(-1)
		server.Error(c, fiber.StatusServiceUnavailable,
			fmt.Sprintf("%d clients follow the jobs already; %s", MaxJobStreams, instead))
		return
	}
	stream.SetHeaders(c)
	stream.Hijack(c, a.opts.StreamWriteTimeout, func(w *stream.Writer) {
		keepalive := a.opts.Clock.NewTicker(stream.DefaultKeepAlive)
		defer keepalive.Stop()
		serve(w, keepalive.C())
	}, func() { a.jobStreams.Add(-1) })
}

// streamJobs is GET /bench as a server-sent stream: a `jobs` event with the
// list (as the JSON answer has it) on connect, then one after each change,
// at most one per jobsFrameInterval, so the panel follows runs without
// polling. It ends when the job service closes.
func (a *API) streamJobs(c *fiber.Ctx, f jobs.Filter) error {
	f.Status = bench.JobStatus(strings.Clone(string(f.Status))) // Fiber reuses the request's memory
	clk := a.opts.Clock
	a.followStream(c, "read GET /bench without Accept: text/event-stream", func(w *stream.Writer, keepalive <-chan time.Time) {
		var frame []byte
		for {
			// Watch before reading the list, so no change falls between.
			changed, closing := a.jobs.Watch()
			if closing {
				return
			}
			data, _ := json.Marshal(a.jobList(f))
			frame = append(append(append(frame[:0], "event: jobs\ndata: "...), data...), "\n\n"...)
			if w.Event(frame) != nil {
				return // the client went away, or stopped reading
			}
			wrote := clk.Now()
		wait:
			for {
				select {
				case <-changed:
					break wait
				case <-keepalive:
					if w.KeepAlive() != nil {
						return
					}
				}
			}
			if rest := jobsFrameInterval - clk.Now().Sub(wrote); rest > 0 {
				// Coalesce the changes of the interval into one frame.
				_ = clk.Sleep(context.Background(), rest)
			}
		}
	})
	return nil
}

func (a *API) getJob(c *fiber.Ctx) error {
	j, err := a.jobs.Get(c.Params("id"))
	if err != nil {
		return a.jobError(c, err)
	}
	return c.JSON(j.View())
}

// cancelJob answers 200 with the job, as the original does: cancelled
// already (it was queued), its runner stopping (stage "cancelling"; the
// job ends failed and cancelled once it has), or ended before, untouched.
func (a *API) cancelJob(c *fiber.Ctx) error {
	j, err := a.jobs.Cancel(c.Params("id"))
	if err != nil && !errors.Is(err, jobs.ErrFinished) {
		return a.jobError(c, err)
	}
	return c.JSON(j.View())
}

// EventList is GET /bench/:id/events' JSON body.
type EventList struct {
	Events []bench.JobEvent `json:"events"`
	// Ended is true once the job has its final status: no event follows.
	Ended bool `json:"ended"`
}

// jobEvents replays the job's log after ?after=<seq> (or Last-Event-ID).
// With Accept: text/event-stream it is a server-sent stream that follows the
// log until the job ends; otherwise one JSON answer.
func (a *API) jobEvents(c *fiber.Ctx) error {
	// Cloned: Fiber reuses the request's memory once the handler returns,
	// and the stream outlives it.
	id := strings.Clone(c.Params("id"))
	afterText := c.Query("after", c.Get("Last-Event-ID"))
	after := 0
	if afterText != "" {
		n, err := strconv.Atoi(afterText)
		if err != nil || n < 0 {
			return server.Error(c, fiber.StatusBadRequest, fmt.Sprintf("after %q is not an event sequence number (0 or more)", capEcho(afterText)))
		}
		after = n
	}
	// The first read answers a JSON request, or opens the stream, which
	// then reads on from where it ended.
	evs, off, changed, ended, err := a.jobs.EventsAt(id, after, 0)
	if err != nil {
		return a.jobError(c, err)
	}
	if !acceptsEventStream(c) {
		return c.JSON(EventList{Events: evs, Ended: ended})
	}
	svc := a.jobs
	a.followStream(c, "read GET /bench/"+id+"/events without Accept: text/event-stream", func(w *stream.Writer, keepalive <-chan time.Time) {
		var frame []byte
		for {
			frame = frame[:0]
			for _, e := range evs {
				data, _ := json.Marshal(e)
				frame = fmt.Appendf(frame, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, data)
				after = e.Seq
			}
			// The events read at once go out as one write.
			if len(frame) > 0 && w.Event(frame) != nil {
				return // the client went away, or stopped reading
			}
			if ended {
				return
			}
			select {
			case <-changed:
			case <-keepalive:
				if w.KeepAlive() != nil {
					return
				}
			}
			var err error
			if evs, off, changed, ended, err = svc.EventsAt(id, after, off); err != nil {
				return
			}
		}
	})
	return nil
}

func acceptsEventStream(c *fiber.Ctx) bool {
	return c.Accepts(fiber.MIMEApplicationJSON, "text/event-stream") == "text/event-stream"
}

func (a *API) jobReport(c *fiber.Ctx) error {
	id := c.Params("id")
	dir, err := a.jobs.Dir(id)
	if err != nil {
		return a.jobError(c, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, jobs.ReportFile))
	if errors.Is(err, os.ErrNotExist) {
		j, _ := a.jobs.Get(id)
		return server.Error(c, fiber.StatusNotFound, fmt.Sprintf("job %s (%s) has no report.md yet", id, j.Status))
	}
	if err != nil {
		return a.storageError(c, "read the report of job "+id, err)
	}
	c.Set(fiber.HeaderContentType, "text/markdown; charset=utf-8")
	return c.Send(data)
}

func (a *API) jobError(c *fiber.Ctx, err error) error {
	if errors.Is(err, jobs.ErrNotFound) {
		return server.Error(c, fiber.StatusNotFound, fmt.Sprintf("no bench-serve job %q", capEcho(c.Params("id"))))
	}
	return a.storageError(c, "read the job", err)
}
