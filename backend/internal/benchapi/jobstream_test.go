package benchapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/sse"
)

// TestJobListStream follows GET /bench as a stream over a real loopback
// connection: the list on connect, a frame when a job starts and when it
// ends, and the end of the stream when the job service closes.
func TestJobListStream(t *testing.T) {
	ta := newTestAPI(t, 0)
	res := ta.follow("/bench?limit=5")
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	rd := sse.NewReader(res.Body, sse.Options{})
	var end error // why the stream ended
	next := func() (bench.JobList, bool) {
		ev, err := rd.Next()
		if err != nil {
			end = err
			return bench.JobList{}, false
		}
		var l bench.JobList
		if err := json.Unmarshal(ev.Data, &l); err != nil {
			t.Fatalf("frame %s: %v", ev.Data, err)
		}
		return l, true
	}
	if l, ok := next(); !ok || len(l.Jobs) != 0 || l.Lease.Held {
		t.Fatalf("first frame %+v", l)
	}
	j := ta.start("ok")
	// Frames follow the job until one shows it done, the GPU free again.
	for {
		l, ok := next()
		if !ok {
			t.Fatalf("stream ended before job %s was done: %v", j.ID, end)
		}
		if len(l.Jobs) == 1 && l.Jobs[0].ID == j.ID && l.Jobs[0].Status == bench.StatusDone && !l.Lease.Held {
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ta.api.jobs.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for { // the service closed: the stream ends
		if _, ok := next(); !ok {
			break
		}
	}
}

// With MaxJobStreams clients following already (the job list and the
// jobs' event logs together), one more is a 503 that says what to do
// instead, and the JSON answers still come.
func TestJobStreamsBounded(t *testing.T) {
	ta := newTestAPI(t, 0)
	j := ta.start("ok")
	ta.waitDone(j.ID)
	for _, tc := range []struct{ path, instead string }{
		{"/bench", "without Accept: text/event-stream"},
		{"/bench/" + j.ID + "/events", "/events without Accept: text/event-stream"},
	} {
		// ta.do fails the whole test: no subtests.
		ta.api.jobStreams.Store(MaxJobStreams)
		res := ta.do("GET", tc.path, "", "Accept", "text/event-stream")
		if res.status != http.StatusServiceUnavailable || !strings.Contains(res.apiError(t).Message, tc.instead) {
			t.Fatalf("%s: status %d %s", tc.path, res.status, res.body)
		}
		if ta.api.jobStreams.Load() != MaxJobStreams {
			t.Fatalf("%s: a refused follower counted: %d", tc.path, ta.api.jobStreams.Load())
		}
		if res := ta.do("GET", tc.path, ""); res.status != http.StatusOK {
			t.Fatalf("%s: JSON answer: %d %s", tc.path, res.status, res.body)
		}
	}
}

// A follower of a job's events holds its place only while it follows:
// the stream of an ended job replays the log and ends, and the place is
// free again.
func TestJobEventStreamFreesItsPlace(t *testing.T) {
	ta := newTestAPI(t, 0)
	j := ta.start("ok")
	ta.waitDone(j.ID)
	res := ta.follow("/bench/" + j.ID + "/events")
	body, err := io.ReadAll(res.Body) // ends with the job's log
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), "event: "+bench.EventDone) {
		t.Errorf("stream %q has no %s event", body, bench.EventDone)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ta.api.jobStreams.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d followers still counted after the stream ended", ta.api.jobStreams.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
