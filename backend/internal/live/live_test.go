package live

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/backend/internal/ingest"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/routes"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// liveRoutes are the store's rows of the route table (app.Routes), and
// POST /events' when events is not nil.
func liveRoutes(l *Live, events *ingest.HTTP) []server.Route {
	rs := []server.Route{
		{Method: "GET", Path: routes.Prefix + "/snapshot", Handler: l.HandleSnapshot},
		{Method: "GET", Path: routes.Stream, Handler: l.HandleStream, Streams: true},
	}
	if events != nil {
		rs = append(rs, server.Route{Method: "POST", Path: routes.Events, Handler: events.Handle, Body: server.LargeBody, Token: server.EventsToken})
	}
	return rs
}

var t0 = time.UnixMilli(1_764_690_000_000)

const recorded = `{"type":"model.load","at":1764690000010,"data":{"model":"m","phase":"finished","ms":2400,"weightsBytes":100}}
{"type":"scheduler.sample","at":1764690001000,"data":{"model":"m","active":2,"capacity":8,"queued":1,"tokensPerSecond":80}}
{"type":"request.finished","at":1764690001500,"data":{"model":"m","requestId":"r1","finish":"stop","promptTokens":100,"cachedPromptTokens":50,"completionTokens":20,"queueMs":5,"ttftMs":120,"prefillTokensPerSecond":3000,"decodeTokensPerSecond":50,"totalMs":520}}
{"type":"job.state","at":1764690001600,"data":{"id":"j"}}
`

func getJSON(t *testing.T, app interface {
	Test(*http.Request, ...int) (*http.Response, error)
}, path string, v any) int {
	t.Helper()
	resp, err := app.Test(httptest.NewRequest("GET", path, nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("%s: not JSON: %s", path, body)
	}
	return resp.StatusCode
}

// Events posted to the API reach the snapshot, and only changes move its
// version.
func TestPostedEventsReachTheSnapshot(t *testing.T) {
	b := bus.New()
	clk := clock.NewFake(t0)
	l := New(b, Options{Clock: clk})
	defer l.Close()
	app := server.New(server.Options{}, liveRoutes(l, ingest.NewHTTP(b, ingest.Options{Clock: clk}))...)

	resp, err := app.Test(httptest.NewRequest("POST", "/api/metrics/events", strings.NewReader(recorded)), -1)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("post: %v %v", resp.StatusCode, err)
	}
	b.Flush()
	clk.Advance(time.Minute)

	var snap snapshot.Snapshot
	if code := getJSON(t, app, "/api/metrics/snapshot", &snap); code != 200 {
		t.Fatalf("status %d", code)
	}
	if snap.At != t0.Add(time.Minute).UnixMilli() || snap.StartedAt != t0.UnixMilli() {
		t.Errorf("at %d startedAt %d", snap.At, snap.StartedAt)
	}
	if snap.Version != 3 {
		t.Errorf("version %d, want 3 (the ignored job.state changes nothing)", snap.Version)
	}
	if len(snap.Models) != 1 || snap.Models[0].State != snapshot.StateResident || len(snap.Schedulers) != 1 {
		t.Errorf("models %+v schedulers %+v", snap.Models, snap.Schedulers)
	}
	if w := snap.Requests.Window; snap.Requests.Finished != 1 || w.TTFTMs == nil || w.TTFTMs.P50 != 120 || *w.CachedPromptShare != 0.5 {
		t.Errorf("requests %+v", snap.Requests)
	}
	if len(snap.Series) != 1 || snap.Series[0].TokensPerSecond != 80 {
		t.Errorf("series %+v", snap.Series)
	}

	// The raw JSON uses the documented names, with empty lists as [].
	var raw map[string]any
	getJSON(t, app, "/api/metrics/snapshot", &raw)
	for _, k := range []string{"at", "startedAt", "version", "models", "schedulers", "caches", "requests", "series"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("snapshot lacks %q", k)
		}
	}
	if caches, ok := raw["caches"].([]any); !ok || len(caches) != 0 {
		t.Errorf("caches = %#v, want []", raw["caches"])
	}
}

// Unknown API paths answer in the API's error format.
func TestUnknownRoute(t *testing.T) {
	b := bus.New()
	l := New(b, Options{})
	defer l.Close()
	app := server.New(server.Options{}, liveRoutes(l, nil)...)
	var body struct {
		Error struct{ Message, Type string }
	}
	if code := getJSON(t, app, "/api/metrics/nope", &body); code != 404 || body.Error.Type != "invalid_request_error" {
		t.Fatalf("status %d body %+v", code, body)
	}
}

// The stream carries the store's snapshot: a change reaches it at the next
// tick, or at once after a quiet Interval.
func TestStreamCarriesTheStore(t *testing.T) {
	b := bus.New()
	clk := clock.NewFake(t0)
	l := New(b, Options{Clock: clk})
	app := server.New(server.Options{}, liveRoutes(l, ingest.NewHTTP(b, ingest.Options{Clock: clk}))...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	defer func() {
		l.Close()
		_ = app.ShutdownWithTimeout(5 * time.Second)
	}()
	base := "http://" + ln.Addr().String() + "/api/metrics"

	// The deadline only turns a frame that never comes into a failure.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	next := func() snapshot.Snapshot {
		t.Helper()
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var s snapshot.Snapshot
				if err := json.Unmarshal([]byte(data), &s); err != nil {
					t.Fatal(err)
				}
				return s
			}
		}
	}
	if s := next(); s.Version != 0 || len(s.Models) != 0 {
		t.Fatalf("opening snapshot %+v", s)
	}
	pr, err := http.Post(base+"/events", "application/x-ndjson", strings.NewReader(recorded))
	if err != nil || pr.StatusCode != 200 {
		t.Fatalf("post: %v", err)
	}
	pr.Body.Close()
	b.Flush()
	clk.Advance(500 * time.Millisecond)
	if s := next(); s.Version != 3 || s.Requests.Finished != 1 {
		t.Fatalf("after the post: version %d finished %d", s.Version, s.Requests.Finished)
	}

	// After a quiet Interval a change goes out at once, between ticks.
	// The tick at 1000 ms, delivered at 1400, has nothing new; the hub may
	// still be handling it when the post lands, and then that tick sends
	// the change: the same frame (stream's TestLeadingEdge holds the edge).
	clk.Advance(900 * time.Millisecond)
	one := strings.Replace(strings.Split(recorded, "\n")[2], `"r1"`, `"r2"`, 1)
	pr, err = http.Post(base+"/events", "application/x-ndjson", strings.NewReader(one))
	if err != nil || pr.StatusCode != 200 {
		t.Fatalf("post: %v", err)
	}
	pr.Body.Close()
	if s := next(); s.Version != 4 || s.Requests.Finished != 2 || s.At != t0.Add(1400*time.Millisecond).UnixMilli() {
		t.Fatalf("after a quiet post: version %d finished %d at %d", s.Version, s.Requests.Finished, s.At-t0.UnixMilli())
	}
}

// BenchmarkBusToStore is the whole in-process path: publish on the bus,
// reduce in the store's subscriber.
func BenchmarkBusToStore(b *testing.B) {
	bs := bus.New()
	l := New(bs, Options{})
	defer l.Close()
	var decoded []events.Event
	for _, line := range strings.Split(strings.TrimSpace(recorded), "\n") {
		ev, err := events.Parse([]byte(line))
		if err != nil {
			b.Fatal(err)
		}
		decoded = append(decoded, ev)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		bs.Publish(decoded[i%len(decoded)])
		if i++; i%4096 == 0 {
			bs.Flush() // stay inside the queue: this measures throughput, not drops
		}
	}
	bs.Flush()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
