package ingest

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/routes"
)

// eventsRoute is POST /events' row of the route table (app.Routes).
func eventsRoute(h *HTTP) server.Route {
	return server.Route{Method: "POST", Path: routes.Events, Handler: h.Handle, Body: server.LargeBody, Token: server.EventsToken}
}

// sink records what reaches the bus.
type sink struct {
	mu  sync.Mutex
	got []events.Event
}

func (s *sink) handle(ev events.Event) {
	s.mu.Lock()
	s.got = append(s.got, ev)
	s.mu.Unlock()
}

func (s *sink) types() []events.Type {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []events.Type
	for _, ev := range s.got {
		out = append(out, ev.Type)
	}
	return out
}

// hostFlat is the example of what the host publishes.
const hostFlat = `{"type":"model.load","at":1764690000000,"model":"mlx-community/Qwen3-4B-4bit","phase":"finished","ms":2400,"weightsBytes":2263000000,"resumed":false}
{"type":"request.finished","at":1764690001000,"model":"mlx-community/Qwen3-4B-4bit","requestId":"r1","finish":"stop","promptTokens":812,"cachedPromptTokens":768,"completionTokens":64,"queueMs":null,"ttftMs":88.1,"prefillTokensPerSecond":null,"decodeTokensPerSecond":60,"totalMs":1154}
{"type":"cache.sample","at":1764690001000,"model":"mlx-community/Qwen3-4B-4bit","cache":"prefix","bytes":50331648,"capacityBytes":null,"hits":768,"misses":1737}`

// testOptions puts the clock at t0, when the test events happen.
func testOptions(t *testing.T) Options {
	return Options{Clock: clock.NewFake(time.UnixMilli(t0)), Logger: testLogger(t)}
}

type postReply struct {
	Reply
	status int
}

func post(t *testing.T, b *bus.Bus, h *HTTP, opts server.Options, body, auth string) postReply {
	t.Helper()
	app := server.New(opts, eventsRoute(h))
	req := httptest.NewRequest("POST", "/api/metrics/events", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-ndjson")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	var r postReply
	if err := json.Unmarshal(raw, &r.Reply); err != nil {
		t.Fatalf("reply is not JSON: %s", raw)
	}
	r.status = resp.StatusCode
	b.Flush()
	return r
}

func TestPostEvents(t *testing.T) {
	manyBad := strings.Repeat(badNeg+"\n", 150)
	for _, tc := range []struct {
		name      string
		auth      string
		body      string
		status    int
		errType   string
		accepted  int
		ignored   int
		rejected  int
		listed    int
		truncated bool
		published []events.Type
		reasons   []string // the listed rejections' reasons, when given
	}{
		{
			name: "NDJSON", body: okLine + "\n" + okOther + "\n",
			status: 200, accepted: 1, ignored: 1,
			published: []events.Type{events.TypeSchedulerSample, "catalog.changed"},
		},
		{
			name: "JSON array", body: "[" + okLine + "," + badType + "]",
			status: 200, accepted: 1, rejected: 1, listed: 1,
			published: []events.Type{events.TypeSchedulerSample},
		},
		{
			name: "some bad lines", body: badType + "\n" + okLine + "\nnope\n",
			status: 200, accepted: 1, rejected: 2, listed: 2,
			published: []events.Type{events.TypeSchedulerSample},
		},
		{
			name: "all bad", body: badType + "\n" + badMiss,
			status: 400, errType: "invalid_request_error", rejected: 2, listed: 2,
		},
		{
			name: "too many to list", body: manyBad + okLine,
			status: 200, accepted: 1, rejected: 150, listed: MaxListedRejections, truncated: true,
			published: []events.Type{events.TypeSchedulerSample},
		},
		{
			name: "too many to list, then a broken array", body: "[" + strings.Repeat(badNeg+",", 150) + "{oops",
			status: 400, errType: "invalid_request_error", rejected: 151, listed: MaxListedRejections, truncated: true,
		},
		{name: "empty", body: "  \n", status: 400, errType: "invalid_request_error"},
		{
			name: "only ignored events: nothing wrong", body: okOther + "\n" + okOther,
			status: 200, ignored: 2, published: []events.Type{"catalog.changed", "catalog.changed"},
		},
		{
			name: "core events all rejected, ignored ones beside them: still a 400", body: okOther + "\n" + badType,
			status: 400, errType: "invalid_request_error", ignored: 1, rejected: 1, listed: 1,
			published: []events.Type{"catalog.changed"},
		},
		{
			name: "the host's flat events", body: hostFlat,
			status: 200, accepted: 3,
			published: []events.Type{events.TypeModelLoad, events.TypeRequestFinished, events.TypeCacheSample},
		},
		{
			name: "stamped past the allowed skew", body: schedAt(t0+10*60_000) + "\n" + okLine,
			status: 200, accepted: 1, rejected: 1, listed: 1,
			published: []events.Type{events.TypeSchedulerSample},
		},
		{
			name: "at 9e15 alone", body: schedAt(9_000_000_000_000_000),
			status: 400, errType: "invalid_request_error", rejected: 1, listed: 1,
		},
		{
			name: "more than a day old, from a live source", body: schedAt(t0 - 25*3600_000),
			status: 400, errType: "invalid_request_error", rejected: 1, listed: 1,
		},
		{
			// A core event's gap to now is counted in milliseconds: as a
			// time.Duration it would be clamped at 292 years.
			name: "stamped at the last millisecond of year 9999", body: schedAt(events.MaxAt),
			status: 400, errType: "invalid_request_error", rejected: 1, listed: 1,
			reasons: []string{"253402300799999 is 69899336 h 20 min ahead of this server's clock (at most 5 min 00 s allowed)"},
		},
		{
			name:   "an array element over an event's limit is rejected, the array goes on",
			body:   "[" + okLine + "," + padded(events.MaxLineBytes+1) + "," + okOther + "]",
			status: 200, accepted: 1, ignored: 1, rejected: 1, listed: 1,
			published: []events.Type{events.TypeSchedulerSample, "catalog.changed"},
		},
		{
			// The body limit bounds what a POST holds already; an element
			// past the array's read bound ends the array as it ends a
			// followed stream's, the events before it standing.
			name:   "an array element past the read bound ends the array",
			body:   "[" + okLine + "," + padded(1<<20) + "," + okOther + "]",
			status: 200, accepted: 1, rejected: 1, listed: 1,
			published: []events.Type{events.TypeSchedulerSample},
			reasons:   []string{"JSON array element 1 is over the 65536-byte limit for one event: the rest of the array is not read"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bus.New()
			var s sink
			defer b.Subscribe("sink", 1024, s.handle)()
			h := NewHTTP(b, testOptions(t))
			r := post(t, b, h, server.Options{}, tc.body, tc.auth)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d (%+v)", r.status, tc.status, r.Reply)
			}
			if tc.errType != "" && (r.Error == nil || r.Error.Type != tc.errType || r.Error.Message == "") {
				t.Fatalf("error %+v, want type %s", r.Error, tc.errType)
			}
			if tc.status == 200 && r.Error != nil {
				t.Fatalf("error on success: %+v", r.Error)
			}
			if r.Accepted != tc.accepted || r.Ignored != tc.ignored || r.Rejected != tc.rejected ||
				len(r.Errors) != tc.listed || r.Truncated != tc.truncated {
				t.Fatalf("reply %+v", r.Reply)
			}
			if got := s.types(); !slices.Equal(got, tc.published) {
				t.Fatalf("published %v, want %v", got, tc.published)
			}
			for i, want := range tc.reasons {
				if r.Errors[i].Reason != want {
					t.Errorf("rejection %d: %q, want %q", i, r.Errors[i].Reason, want)
				}
			}
			if st := h.Stats(); st.Accepted != uint64(tc.accepted) || st.Ignored != uint64(tc.ignored) || st.Rejected != uint64(tc.rejected) {
				t.Fatalf("counter %+v", st)
			}
		})
	}
}

// Malformed input of every kind leaves the route serving the next batch.
func TestPostKeepsServing(t *testing.T) {
	b := bus.New()
	var s sink
	defer b.Subscribe("sink", 1024, s.handle)()
	h := NewHTTP(b, testOptions(t))
	for _, body := range []string{
		"\x00\x01\x02", "[", "[{", "{}", `{"type":`, strings.Repeat("x", 2<<20), "[1," + strings.Repeat("[", 20_000),
		`{"type":"request.finished","at":1,"data":{"totalMs":"NaN"}}`,
	} {
		if r := post(t, b, h, server.Options{}, body, ""); r.status != 400 {
			t.Fatalf("status %d for %.40q", r.status, body)
		}
	}
	if r := post(t, b, h, server.Options{}, okLine, ""); r.status != 200 || r.Accepted != 1 {
		t.Fatalf("after the bad batches: %+v", r)
	}
	if got := s.types(); len(got) != 1 {
		t.Fatalf("published %v", got)
	}
}

// A body over the limit is refused with the API's error body, over a real
// connection (the limit is enforced while reading it).
func TestPostBodyLimit(t *testing.T) {
	b := bus.New()
	app := server.New(server.Options{BodyLimit: 4096}, eventsRoute(NewHTTP(b, testOptions(t))))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	defer app.Shutdown()
	resp, err := http.Post("http://"+ln.Addr().String()+"/api/metrics/events", "application/x-ndjson",
		strings.NewReader(strings.Repeat(okLine+"\n", 100)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Error struct{ Message, Type string }
	}
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &body); err != nil || resp.StatusCode != 413 || body.Error.Type != "invalid_request_error" {
		t.Fatalf("status %d body %s", resp.StatusCode, raw)
	}
}

// ?retime=now moves a batch's newest event to now, keeping the gaps, so
// events written days ago are accepted as live; without it they are
// refused as stale. A bad value is a 400 that accepts nothing.
func TestPostRetime(t *testing.T) {
	const daysAgo = 54 * time.Hour
	tests := []struct {
		query    string
		status   int
		accepted int
		at       []int64 // the events' at on the bus
	}{
		{"", 400, 0, nil},
		{"?retime=now", 200, 3, []int64{t0 - 1000, t0, t0}},
		{"?retime=yesterday", 400, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			b := bus.New()
			var s sink
			defer b.Subscribe("test", 64, s.handle)()
			h := NewHTTP(b, testOptions(t))
			// hostFlat's events, moved 54 h into the past.
			old := strings.NewReplacer("1764690000000", "1764495600000", "1764690001000", "1764495601000").Replace(hostFlat)
			if time.UnixMilli(t0).Sub(time.UnixMilli(1764495600000)) != daysAgo {
				t.Fatal("the events are not 54 h old")
			}
			app := server.New(server.Options{}, eventsRoute(h))
			req := httptest.NewRequest("POST", "/api/metrics/events"+tt.query, strings.NewReader(old))
			req.Header.Set("Content-Type", "application/x-ndjson")
			resp, err := app.Test(req, -1)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			b.Flush()
			var r Reply
			json.Unmarshal(raw, &r)
			if resp.StatusCode != tt.status || r.Accepted != tt.accepted {
				t.Fatalf("%d %s, want %d with %d accepted", resp.StatusCode, raw, tt.status, tt.accepted)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			var at []int64
			for _, ev := range s.got {
				at = append(at, ev.At)
			}
			if !slices.Equal(at, tt.at) {
				t.Fatalf("at = %v, want %v", at, tt.at)
			}
		})
	}
}

func loadAt(at int64) string {
	return fmt.Sprintf(`{"type":"model.load","at":%d,"model":"m","phase":"finished","ms":2400}`, at)
}

func otherAt(at int64) string { return fmt.Sprintf(`{"type":"catalog.changed","at":%d}`, at) }

// ?retime=now takes its shift from core events only, since another type's
// at is never checked; and an event the shift moves outside 1..MaxAt is a
// rejection that says so, never a negative at on the bus.
func TestPostRetimeBounds(t *testing.T) {
	tests := []struct {
		name     string
		body     []string
		accepted int
		ignored  int
		at       []int64 // the events' at on the bus
		reasons  []string
	}{
		{
			name:     "a far ignored event does not move the core events",
			body:     []string{loadAt(t0), loadAt(t0), otherAt(events.MaxAt)},
			accepted: 2, ignored: 1,
			at: []int64{t0, t0, events.MaxAt},
		},
		{
			name:     "an ignored event moved past year 9999",
			body:     []string{loadAt(t0 - 1000), otherAt(events.MaxAt), loadAt(t0 - 2000)},
			accepted: 2,
			at:       []int64{t0, t0 - 1000},
			reasons: []string{"253402300799999 moved by ?retime=now (+1000 ms, the batch's newest core event to now) " +
				"is 253402300800999, outside 1 to 253402300799999"},
		},
		{
			name:     "an ignored event moved before 1970",
			body:     []string{otherAt(1), loadAt(t0 + 60_000)},
			accepted: 1,
			at:       []int64{t0},
			reasons: []string{"1 moved by ?retime=now (-60000 ms, the batch's newest core event to now) " +
				"is -59999, outside 1 to 253402300799999"},
		},
		{
			name:     "a core event moved before 1970",
			body:     []string{loadAt(1), loadAt(t0 + 60_000)},
			accepted: 1,
			at:       []int64{t0},
			reasons: []string{"1 moved by ?retime=now (-60000 ms, the batch's newest core event to now) " +
				"is -59999, outside 1 to 253402300799999"},
		},
		{
			name:    "only ignored events: nothing to move",
			body:    []string{otherAt(1), otherAt(events.MaxAt)},
			ignored: 2,
			at:      []int64{1, events.MaxAt},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := bus.New()
			var s sink
			defer b.Subscribe("test", 64, s.handle)()
			app := server.New(server.Options{}, eventsRoute(NewHTTP(b, testOptions(t))))
			req := httptest.NewRequest("POST", "/api/metrics/events?retime=now", strings.NewReader(strings.Join(tt.body, "\n")))
			req.Header.Set("Content-Type", "application/x-ndjson")
			resp, err := app.Test(req, -1)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			b.Flush()
			var r Reply
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatalf("reply %s", raw)
			}
			if resp.StatusCode != 200 || r.Accepted != tt.accepted || r.Ignored != tt.ignored || r.Rejected != len(tt.reasons) {
				t.Fatalf("%d %s", resp.StatusCode, raw)
			}
			for i, want := range tt.reasons {
				if got := r.Errors[i]; got.Field != "at" || got.Reason != want {
					t.Errorf("rejection %d: %+v, want at: %q", i, got, want)
				}
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			var at []int64
			for _, ev := range s.got {
				at = append(at, ev.At)
			}
			if !slices.Equal(at, tt.at) {
				t.Errorf("at = %v, want %v", at, tt.at)
			}
		})
	}
}

// testLogger logs into the test's output.
func testLogger(t testing.TB) *slog.Logger {
	return logging.Func(func(level slog.Level, msg string) { t.Log(level, msg) })
}
