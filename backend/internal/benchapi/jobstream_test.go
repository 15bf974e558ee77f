package benchapi

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
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
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	next := func() (bench.JobList, bool) {
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var l bench.JobList
			if err := json.Unmarshal([]byte(data), &l); err != nil {
				t.Fatalf("frame %s: %v", data, err)
			}
			return l, true
		}
		return bench.JobList{}, false
	}
	if l, ok := next(); !ok || len(l.Jobs) != 0 || l.Lease.Held {
		t.Fatalf("first frame %+v", l)
	}
	j := ta.start("ok")
	// Frames follow the job until one shows it done, the GPU free again.
	for {
		l, ok := next()
		if !ok {
			t.Fatalf("stream ended before job %s was done: %v", j.ID, sc.Err())
		}
		if len(l.Jobs) == 1 && l.Jobs[0].ID == j.ID && l.Jobs[0].Status == bench.StatusDone && !l.Lease.Held {
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ta.api.Jobs.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() { // the service closed: the stream ends
	}
}

// With MaxJobStreams clients following already, one more is a 503 that
// says what to do instead, and the JSON list still answers.
func TestJobListStreamBounded(t *testing.T) {
	ta := newTestAPI(t, 0)
	ta.api.jobStreams.Store(MaxJobStreams)
	res := ta.do("GET", "/bench", "", "Accept", "text/event-stream")
	if res.status != http.StatusServiceUnavailable || !strings.Contains(res.apiError(t).Message, "without Accept: text/event-stream") {
		t.Fatalf("status %d %s", res.status, res.body)
	}
	if ta.api.jobStreams.Load() != MaxJobStreams {
		t.Fatalf("a refused follower counted: %d", ta.api.jobStreams.Load())
	}
	if res := ta.do("GET", "/bench", ""); res.status != http.StatusOK {
		t.Fatalf("JSON list: %d %s", res.status, res.body)
	}
}
