package benchapi

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/history"
	"github.com/mlx-bun/mlx-metrics/backend/internal/jobs"
	"github.com/mlx-bun/mlx-metrics/backend/internal/jobs/jobstest"
	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/backend/internal/profiles"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/gpu/lease"
	"github.com/mlx-bun/mlx-metrics/shared/apierror"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// routes are bench-serve's rows of the route table (app.Routes).
func routes(a *API) []server.Route {
	h := a.Handlers()
	const api = server.APIPrefix
	get, post, del := fiber.MethodGet, fiber.MethodPost, fiber.MethodDelete
	return []server.Route{
		{Method: get, Path: api + "/bench/profiles", Handler: h.Profiles},
		{Method: post, Path: api + "/bench", Handler: h.Start, Token: server.APIToken},
		{Method: get, Path: api + "/bench", Handler: h.Jobs, Streams: true},
		{Method: get, Path: api + "/bench/:id", Handler: h.Job},
		{Method: del, Path: api + "/bench/:id", Handler: h.Cancel, Token: server.APIToken},
		{Method: get, Path: api + "/bench/:id/events", Handler: h.JobEvents, Streams: true},
		{Method: get, Path: api + "/bench/:id/report", Handler: h.JobReport},
		{Method: get, Path: api + "/bench/:id/requests/:file", Handler: h.JobRequests},
		{Method: get, Path: api + "/history", Handler: h.History},
		{Method: post, Path: api + "/history", Handler: h.Import, Body: server.LargeBody, Token: server.APIToken},
		{Method: get, Path: api + "/history/:id", Handler: h.Run},
		{Method: del, Path: api + "/history/:id", Handler: h.Forget, Token: server.APIToken},
	}
}

func TestMain(m *testing.M) {
	jobstest.Main()
	os.Exit(m.Run())
}

type testAPI struct {
	t     *testing.T
	app   *fiber.App
	api   *API
	clock *jobstest.Clock // real time; the SIGKILL timer fires when the test says
}

func newTestAPI(t *testing.T, maxQueued int) *testAPI {
	t.Helper()
	return newTestAPIOpts(t, maxQueued, Options{})
}

// newTestAPIOpts is newTestAPI with the API's options.
func newTestAPIOpts(t *testing.T, maxQueued int, opts Options) *testAPI {
	t.Helper()
	home := t.TempDir()
	plans := profiles.New(filepath.Join(home, "metrics", "bench", "plans"))
	err := plans.Seed(map[string]bench.Plan{
		"ok":         jobstest.Plan("ok", 2),
		"incomplete": jobstest.Plan("incomplete", 2),
		"block":      jobstest.Plan("block", 1),
	})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(plans.FileFor("broken"), []byte(`{"scope":"nowhere"}`), 0o644)
	hist, err := history.Open(filepath.Join(home, "metrics", "history"), history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := lease.New("no GPU found", lease.Options{})
	argv, env := jobstest.RunnerArgv()
	c := jobstest.NewClock(clock.Real{})
	svc, err := jobs.New(jobs.Options{
		RunsDir: filepath.Join(home, "metrics", "bench", "runs"),
		Lease:   l, Runner: argv, Env: env, Clock: c, MaxQueued: maxQueued,
		Finished: func(rec bench.RunRecord, dir string) error { return hist.Put(bench.Compact(rec, dir)) },
		Logger:   logging.Func(func(level slog.Level, msg string) { t.Log(level, msg) }),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := svc.Close(ctx); err != nil {
			t.Errorf("a job outlived Close: %v", err)
		}
		hist.Close()
	})
	api := New(svc, hist, plans, l, opts)
	return &testAPI{t: t, app: server.New(server.Options{}, routes(api)...), api: api, clock: c}
}

// follow opens path as a server-sent stream over a real loopback
// connection (app.Test cannot read an answer that does not end); the body
// is closed when the test ends.
func (ta *testAPI) follow(path string, header ...string) *http.Response {
	ta.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ta.t.Fatal(err)
	}
	go ta.app.Listener(ln)
	ta.t.Cleanup(func() { ta.app.Shutdown() })
	req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+server.APIPrefix+path, nil)
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{Timeout: time.Minute} // a safeguard against a hang
	res, err := client.Do(req)
	if err != nil {
		ta.t.Fatal(err)
	}
	ta.t.Cleanup(func() { res.Body.Close() })
	return res
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (ta *testAPI) do(method, path, body string, header ...string) response {
	ta.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, server.APIPrefix+path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := ta.app.Test(req, -1)
	if err != nil {
		ta.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return response{res.StatusCode, res.Header, data}
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// job decodes a job as the API shows it (bench.JobView) into the record.
func (r response) job(t *testing.T) bench.Job {
	t.Helper()
	var v bench.JobView
	r.decode(t, &v)
	return v.Job()
}

// entry decodes a history entry as the API shows it (bench.RunView).
func (r response) entry(t *testing.T) bench.HistoryEntry {
	t.Helper()
	var v bench.RunView
	r.decode(t, &v)
	return v.Entry()
}

func (r response) apiError(t *testing.T) apierror.Detail {
	t.Helper()
	var b apierror.Body
	r.decode(t, &b)
	return b.Error
}

func (ta *testAPI) start(profile string) bench.Job {
	ta.t.Helper()
	r := ta.do("POST", "/bench", fmt.Sprintf(`{"profile":%q}`, profile))
	if r.status != fiber.StatusAccepted {
		ta.t.Fatalf("POST /bench %s: %d %s", profile, r.status, r.body)
	}
	return r.job(ta.t)
}

func (ta *testAPI) waitDone(id string) bench.Job {
	ta.t.Helper()
	ch, err := ta.api.jobs.Done(id)
	if err != nil {
		ta.t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(time.Minute): // a safeguard against a hang
		ta.t.Fatalf("job %s did not end", id)
	}
	return ta.do("GET", "/bench/"+id, "").job(ta.t)
}

// waitCell follows the job's log until its first cell started.
func (ta *testAPI) waitCell(id string) {
	ta.t.Helper()
	deadline := time.After(time.Minute)
	for {
		evs, changed, ended, err := ta.api.jobs.Events(id, 0)
		if err != nil || ended {
			ta.t.Fatalf("job %s: %v (ended %v)", id, err, ended)
		}
		for _, e := range evs {
			if e.Type == bench.EventStage {
				return
			}
		}
		select {
		case <-changed:
		case <-deadline:
			ta.t.Fatal("no cell started")
		}
	}
}

func TestStartRejects(t *testing.T) {
	ta := newTestAPI(t, 0)
	tests := []struct {
		name, body string
		status     int
		msgHas     []string
	}{
		{"traversal", `{"profile":"../x"}`, 400, []string{"not a path", "bench plan --out"}},
		{"absolute path", `{"profile":"/etc/passwd"}`, 400, []string{"not a path", "bench plan --out"}},
		{"hidden", `{"profile":".ok"}`, 400, []string{"not a path"}},
		{"with extension path", `{"profile":"plans/ok.json"}`, 400, []string{"not a path"}},
		{"unknown profile", `{"profile":"nope"}`, 400, []string{"no such profile", "bench plan --out", filepath.Join("plans", "nope.json")}},
		{"invalid plan", `{"profile":"broken"}`, 400, []string{"invalid plan", "scope", "broken.json"}},
		{"missing profile", `{}`, 400, []string{"missing profile", "bench plan --out"}},
		{"empty profile", `{"profile":""}`, 400, []string{"missing profile"}},
		{"not a string", `{"profile":5}`, 400, []string{"missing profile"}},
		{"null profile", `{"profile":null}`, 400, []string{"missing profile"}},
		{"another case", `{"Profile":"ok"}`, 400, []string{"missing profile"}},
		{"a plan instead", `{"plan":{"cells":[]}}`, 400, []string{"missing profile"}},
		{"null", `null`, 400, []string{"JSON object", "not null"}},
		{"an array", `[{"profile":"ok"}]`, 400, []string{"JSON object"}},
		{"bad json", `{"profile":`, 400, []string{"JSON"}},
		{"two objects", `{"profile":"ok"}{"profile":"ok"}`, 400, []string{"one JSON object"}},
		{"a stray brace after", `{"profile":"ok"}}`, 400, []string{"one JSON object", "nothing after it"}},
		{"stray brackets after", `{"profile":"ok"}]}}`, 400, []string{"one JSON object", "nothing after it"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ta.do("POST", "/bench", tt.body)
			if r.status != tt.status {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			e := r.apiError(t)
			if e.Type != apierror.TypeInvalidRequest {
				t.Errorf("type %q", e.Type)
			}
			for _, want := range tt.msgHas {
				if !strings.Contains(e.Message, want) {
					t.Errorf("message %q lacks %q", e.Message, want)
				}
			}
		})
	}
	if jl := ta.api.jobs.List(jobs.Filter{}); len(jl) != 0 {
		t.Fatalf("a rejected start made jobs: %+v", jl)
	}
}

func TestProfiles(t *testing.T) {
	ta := newTestAPI(t, 0)
	var pl bench.ProfileList
	r := ta.do("GET", "/bench/profiles", "")
	r.decode(t, &pl)
	ps := pl.Profiles
	names := []string{}
	for _, p := range ps {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "block,broken,incomplete,ok" {
		t.Fatalf("profiles = %v", names)
	}
	if ps[1].Error == "" || ps[3].Cells != 2 || ps[3].Error != "" {
		t.Fatalf("profiles = %+v", ps)
	}
}

func TestRunThroughAPI(t *testing.T) {
	ta := newTestAPI(t, 0)
	j := ta.start("ok")
	if j.Status != bench.StatusRunning || j.Profile != "ok" {
		t.Fatalf("started %+v", j)
	}
	j = ta.waitDone(j.ID)
	if j.Status != bench.StatusDone || j.Progress != 1 {
		t.Fatalf("job = %+v", j)
	}

	var list bench.JobList
	ta.do("GET", "/bench", "").decode(t, &list)
	if len(list.Jobs) != 1 || list.Jobs[0].ID != j.ID || list.Lease.Held || list.Lease.Device != "no GPU found" {
		t.Fatalf("list = %+v", list)
	}

	var evs EventList
	ta.do("GET", "/bench/"+j.ID+"/events", "").decode(t, &evs)
	if !evs.Ended || evs.Events[0].Type != bench.EventStarted || evs.Events[len(evs.Events)-1].Type != bench.EventDone {
		t.Fatalf("events = %+v", evs)
	}
	var tail EventList
	ta.do("GET", fmt.Sprintf("/bench/%s/events?after=%d", j.ID, len(evs.Events)-1), "").decode(t, &tail)
	if len(tail.Events) != 1 || tail.Events[0].Type != bench.EventDone {
		t.Fatalf("tail = %+v", tail)
	}
	// Replay after event 1; stdout and stderr interleave freely, so only
	// the event kinds are certain.
	// Over a real connection: the stream's writer owns it, hijacked.
	sse := ta.follow("/bench/"+j.ID+"/events", "Last-Event-ID", "1")
	if ct := sse.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	body, err := io.ReadAll(sse.Body) // the job has ended: the stream ends
	if err != nil {
		t.Fatal(err)
	}
	if s := string(body); strings.Contains(s, "id: 1\n") || !strings.Contains(s, "id: 2\n") || !strings.Contains(s, "event: stage\n") || !strings.Contains(s, "event: done\n") {
		t.Fatalf("stream = %s", s)
	}

	rep := ta.do("GET", "/bench/"+j.ID+"/report", "")
	if rep.status != 200 || !strings.HasPrefix(rep.header.Get("Content-Type"), "text/markdown") || !strings.Contains(string(rep.body), j.ID) {
		t.Fatalf("report %d %q %s", rep.status, rep.header.Get("Content-Type"), rep.body)
	}

	var hl bench.HistoryList
	ta.do("GET", "/history", "").decode(t, &hl)
	if len(hl.Entries) != 1 || hl.Entries[0].ID != j.ID || !hl.Entries[0].Complete || len(hl.Entries[0].Cells) != 2 {
		t.Fatalf("history = %+v", hl)
	}
	e := ta.do("GET", "/history/"+j.ID, "").entry(t)
	if e.ID != j.ID || *e.Cells[0].DecodeTokensPerSecond != 100 || e.RunDirectory == "" {
		t.Fatalf("entry = %+v", e)
	}
	// As the original: 200 and the job, untouched.
	if r := ta.do("DELETE", "/bench/"+j.ID, ""); r.status != 200 || r.job(t).Status != bench.StatusDone {
		t.Fatalf("cancel a done job: %d %s", r.status, r.body)
	}
}

func TestIncompleteRunKeepsEntry(t *testing.T) {
	ta := newTestAPI(t, 0)
	j := ta.waitDone(ta.start("incomplete").ID)
	if j.Status != bench.StatusFailed || len(j.Problems) != 1 {
		t.Fatalf("job = %+v", j)
	}
	e := ta.do("GET", "/history/"+j.ID, "").entry(t)
	if e.Complete || e.ExitCode != 1 || len(e.Problems) != 1 || e.Cells[0].Status != bench.CellFailed {
		t.Fatalf("entry = %+v", e)
	}
}

func TestQueueAndCancel(t *testing.T) {
	ta := newTestAPI(t, 1)
	a := ta.start("block")
	ta.waitCell(a.ID)
	b := ta.start("ok")
	if b.Status != bench.StatusQueued || b.Position != 1 {
		t.Fatalf("b = %+v", b)
	}
	var list bench.JobList
	ta.do("GET", "/bench?status=queued", "").decode(t, &list)
	if len(list.Jobs) != 1 || list.Jobs[0].ID != b.ID || list.Jobs[0].Position != 1 ||
		!list.Lease.Held || list.Lease.Holder != a.ID || list.Lease.Waiting != 1 {
		t.Fatalf("list = %+v", list)
	}
	full := ta.do("POST", "/bench", `{"profile":"ok"}`)
	if full.status != 409 || !strings.Contains(full.apiError(t).Message, "queue is full") {
		t.Fatalf("full queue: %d %s", full.status, full.body)
	}
	r := ta.do("DELETE", "/bench/"+a.ID, "")
	cancelling := r.job(t)
	if r.status != 200 || cancelling.Stage != "cancelling" {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	<-ta.clock.Armed
	if a = ta.waitDone(a.ID); a.Status != bench.StatusCancelled {
		t.Fatalf("a = %+v", a)
	}
	if b = ta.waitDone(b.ID); b.Status != bench.StatusDone {
		t.Fatalf("b = %+v", b)
	}
	var hl bench.HistoryList
	ta.do("GET", "/history", "").decode(t, &hl)
	if len(hl.Entries) != 2 || hl.Entries[0].ID != b.ID || hl.Entries[1].Complete {
		t.Fatalf("history = %+v", hl)
	}
	ta.do("GET", "/bench", "").decode(t, &list)
	if len(list.Jobs) != 2 || list.Jobs[0].ID != b.ID || list.Lease.Held {
		t.Fatalf("list = %+v", list)
	}
}

func TestCancelQueued(t *testing.T) {
	ta := newTestAPI(t, 0)
	a := ta.start("block")
	ta.waitCell(a.ID)
	b := ta.start("ok")
	r := ta.do("DELETE", "/bench/"+b.ID, "")
	j := r.job(t)
	if r.status != 200 || j.Status != bench.StatusCancelled {
		t.Fatalf("cancel queued: %d %s", r.status, r.body)
	}
	if rep := ta.do("GET", "/bench/"+b.ID+"/report", ""); rep.status != 404 || !strings.Contains(rep.apiError(t).Message, "no report.md") {
		t.Fatalf("report of a cancelled queued job: %d %s", rep.status, rep.body)
	}
}

func TestStartWhileStopping(t *testing.T) {
	ta := newTestAPI(t, 0)
	if err := ta.api.jobs.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := ta.do("POST", "/bench", `{"profile":"ok"}`)
	if r.status != fiber.StatusServiceUnavailable {
		t.Fatalf("POST /bench while stopping: %d %s", r.status, r.body)
	}
	if e := r.apiError(t); e.Type != apierror.TypeServer || !strings.Contains(e.Message, "shutting down") {
		t.Fatalf("error = %+v", e)
	}
}

func TestNotFoundAndBadQueries(t *testing.T) {
	ta := newTestAPI(t, 0)
	tests := []struct {
		method, path string
		status       int
	}{
		{"GET", "/bench/nope", 404},
		{"DELETE", "/bench/nope", 404},
		{"GET", "/bench/nope/events", 404},
		{"GET", "/bench/nope/report", 404},
		// Job ids are read from disk on demand: none reaches outside the runs.
		{"GET", "/bench/..%2F..%2Fhistory", 404},
		{"GET", "/bench/..%2Fplans%2Fok.json/report", 404},
		{"GET", "/bench/.open.json", 404},
		{"DELETE", "/bench/..", 404},
		{"GET", "/bench/%2e%2e/events", 404},
		{"GET", "/history/nope", 404},
		{"GET", "/history/..%2F..%2Fetc", 404},
		{"GET", "/history/a%20b", 404},
		{"GET", "/bench?status=lost", 400},
		{"GET", "/bench?limit=0", 400},
		{"GET", "/history?format=xml", 400},
		{"GET", "/history?format=csv&limit=0", 400},
		{"GET", "/bench/x/events?after=-2", 400},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			r := ta.do(tt.method, tt.path, "")
			if r.status != tt.status {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if e := r.apiError(t); e.Message == "" || e.Type != apierror.TypeInvalidRequest {
				t.Fatalf("error = %+v", e)
			}
		})
	}
}

func TestHistoryLimitsAndCSV(t *testing.T) {
	ta := newTestAPI(t, 0)
	const n = 1200
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		start := base.Add(time.Duration(i) * time.Second)
		v := float64(i)
		e := bench.HistoryEntry{ID: bench.NewRunID(start, "x"), Profile: "p", StartedAt: start.UnixMilli(), Complete: true,
			Cells: []bench.CompactCell{{Key: "a", Status: bench.CellMeasured, DecodeTokensPerSecond: &v}, {Key: "b", Status: bench.CellSkipped}}}
		if err := ta.api.history.Put(e); err != nil {
			t.Fatal(err)
		}
	}
	newest := bench.NewRunID(base.Add((n-1)*time.Second), "x")
	tests := []struct {
		query string
		want  int
	}{
		{"", 50}, {"?limit=1", 1}, {"?limit=1000", 1000}, {"?format=json&limit=7", 7},
		// As the original reads them (Number(), then at least 1), up to 1000.
		{"?limit=", 1}, {"?limit=ten", 50}, {"?limit=2.5", 2}, {"?limit=1e2", 100}, {"?limit=0x10", 16},
		{"?limit=+7+", 7}, {"?limit=-3", 1}, {"?limit=Infinity", 50}, {"?limit=5000", 1000}, {"?limit=3&limit=9", 3},
	}
	for _, tt := range tests {
		var hl bench.HistoryList
		ta.do("GET", "/history"+tt.query, "").decode(t, &hl)
		if len(hl.Entries) != tt.want || hl.Entries[0].ID != newest {
			t.Fatalf("%s: %d entries, first %s", tt.query, len(hl.Entries), hl.Entries[0].ID)
		}
		for i := 1; i < len(hl.Entries); i++ {
			if hl.Entries[i].StartedAt >= hl.Entries[i-1].StartedAt {
				t.Fatalf("%s: not newest first at %d", tt.query, i)
			}
		}
	}
	csvTests := []struct {
		query string
		rows  int
	}{{"?format=csv", 1 + 2*n}, {"?format=csv&limit=3", 1 + 2*3}}
	for _, tt := range csvTests {
		r := ta.do("GET", "/history"+tt.query, "")
		if !strings.HasPrefix(r.header.Get("Content-Type"), "text/csv") {
			t.Fatalf("content type %q", r.header.Get("Content-Type"))
		}
		rows, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != tt.rows || rows[1][0] != newest || rows[1][8] != "a" || rows[1][14] != fmt.Sprint(n-1) || rows[2][8] != "b" || rows[2][14] != "" {
			t.Fatalf("%s: %d rows, first %v %v", tt.query, len(rows), rows[0], rows[1])
		}
	}
}

// TestEventStreamFollows reads a running job's stream over a real loopback
// connection: the replay, then the events written while it is connected,
// then the end of the stream when the job ends.
func TestEventStreamFollows(t *testing.T) {
	ta := newTestAPI(t, 0)
	j := ta.start("block")
	ta.waitCell(j.ID)
	res := ta.follow("/bench/" + j.ID + "/events")
	sc := bufio.NewScanner(res.Body)
	var seen []string
	cancelled := false
	for sc.Scan() {
		line := sc.Text()
		kind, ok := strings.CutPrefix(line, "event: ")
		if !ok {
			continue
		}
		seen = append(seen, kind)
		if kind == bench.EventStage && !cancelled {
			// Connected and replayed: now cancel, and keep reading.
			cancelled = true
			if r := ta.do("DELETE", "/bench/"+j.ID, ""); r.status != 200 {
				t.Fatalf("cancel: %d %s", r.status, r.body)
			}
			<-ta.clock.Armed
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(seen) < 3 || seen[0] != bench.EventStarted || seen[len(seen)-1] != bench.EventCancelled {
		t.Fatalf("events = %v", seen)
	}
}

// Every GET route answers HEAD too, as the live routes do: its status and
// headers, no body.
func TestHead(t *testing.T) {
	ta := newTestAPI(t, 1)
	for _, path := range []string{"/history", "/bench", "/bench/profiles"} {
		res := ta.do(http.MethodHead, path, "")
		if res.status != http.StatusOK || len(res.body) != 0 {
			t.Errorf("HEAD %s: %d with %d bytes, want 200 and no body", path, res.status, len(res.body))
		}
	}
}
