package ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/charts"
	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// benchAPI fakes the bench routes; a nil field answers 500.
type benchAPI struct {
	profiles []bench.Profile
	jobs     *bench.JobList
	history  *bench.HistoryList
	asked    *atomic.Int32 // counts requests when set
}

func (b benchAPI) server(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, v any, ok bool) {
		if !ok {
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"error":{"message":"store offline","type":"server_error"}}`))
			return
		}
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /api/metrics/bench/profiles", func(w http.ResponseWriter, r *http.Request) {
		reply(w, bench.ProfileList{Profiles: b.profiles}, b.profiles != nil)
	})
	mux.HandleFunc("GET /api/metrics/bench", func(w http.ResponseWriter, r *http.Request) { reply(w, b.jobs, b.jobs != nil) })
	mux.HandleFunc("GET /api/metrics/history", func(w http.ResponseWriter, r *http.Request) { reply(w, b.history, b.history != nil) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b.asked != nil {
			b.asked.Add(1)
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestBenchView(t *testing.T) {
	profiles := []bench.Profile{
		{Name: "smoke", Scope: "all", Description: "quick check", Cells: 2},
		{Name: "broken", Scope: "scoped", Models: []string{"m"}, Cells: 1, Error: "cells[0]: argv is empty"},
	}
	running := &bench.JobList{
		Jobs: []bench.Job{
			{ID: "20261202T160000Z-ab", Profile: "smoke", Status: bench.StatusRunning, Progress: 0.42, Stage: "decode", Message: "cell 1/2",
				LogTail: []string{"cell m/tree/default: decode run 3/5", "<script>alert(1)</script>"}},
			{ID: "20261202T150000Z-aa", Profile: "smoke", Status: bench.StatusDone, Progress: 1},
		},
		Lease: bench.Lease{Held: true, Holder: "20261202T160000Z-ab", Since: 1764691200000, Waiting: 1, Device: "no GPU found"},
	}
	idle := &bench.JobList{Lease: bench.Lease{Device: "no GPU found"}}
	lastFailed := &bench.JobList{Jobs: []bench.Job{
		{ID: "20261202T170000Z-ac", Profile: "smoke", Status: bench.StatusFailed, FinishedAt: 1764694800000,
			Error: "the runner refused the plan (exit 2)", LogTail: []string{"mlx-metrics: unknown command"}},
	}}
	history := &bench.HistoryList{Entries: []bench.HistoryEntry{
		{ID: "20261202T150000Z-aa", Profile: "smoke", StartedAt: 1764687600000, DurationMs: 61000, Complete: true, Cells: []bench.CompactCell{
			{Key: "m/tree/default", Status: bench.CellMeasured, DecodeTokensPerSecond: f(41.5)},
			{Key: "m/reference/default", Status: bench.CellMeasured, DecodeTokensPerSecond: f(38.2)},
			{Key: "m/reference/big", Status: bench.CellSkipped},
		}},
		{ID: "20261202T140000Z-a9", Profile: "smoke", StartedAt: 1764684000000, DurationMs: 12000, Complete: false, ExitCode: 3},
	}}

	tests := []struct {
		name          string
		api           benchAPI
		want, notWant []string
		disabledRuns  int
	}{
		{
			name: "a run holds the GPU",
			api:  benchAPI{profiles: profiles, jobs: running, history: history},
			want: []string{
				"Device: no GPU found",
				"the GPU is held by job 20261202T160000Z-ab since 16:00:00 (1 waiting)",
				"plan does not validate: cells[0]: argv is empty",
				`data-job="20261202T160000Z-ab"`, `data-status="running"`, "width:42.0%", "42% · decode cell 1/2",
				"cell m/tree/default: decode run 3/5", "&lt;script&gt;alert(1)&lt;/script&gt;",
				`data-action="cancel"`,
			},
			notWant:      []string{"<script>alert(1)</script>"},
			disabledRuns: 2,
		},
		{
			name: "idle with history",
			api:  benchAPI{profiles: profiles, jobs: idle, history: history},
			want: []string{
				"No run in progress.",
				`data-run="20261202T150000Z-aa"`, "2025-12-02 15:00 UTC", "1 min 01 s", "2 / 3", "41.5 tok/s",
				"no (exit 3)", "0 / 0",
				"Trend across runs", `id="chart-trend"`, `value="smoke"`,
				`data-runs="20261202T150000Z-aa"`, "1 run of smoke; 1 run that did not complete left out",
			},
			notWant:      []string{`data-action="cancel"`},
			disabledRuns: 1, // only the plan that does not validate
		},
		{
			name: "the last run failed",
			api:  benchAPI{profiles: profiles, jobs: lastFailed, history: &bench.HistoryList{}},
			want: []string{
				"No run in progress.", `data-status="failed"`, "failed at 17:00:00",
				"the runner refused the plan (exit 2)", "mlx-metrics: unknown command", "No finished runs yet.",
			},
			disabledRuns: 1,
		},
		{
			name: "bench routes fail, the view still renders",
			api:  benchAPI{},
			want: []string{
				`data-error="profiles"`, "Profiles unavailable: 500: store offline",
				`data-error="jobs"`, "Jobs unavailable: 500: store offline",
				`data-error="history"`, "History unavailable: 500: store offline",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := tt.api.server(t)
			v := &BenchView{API: srv.URL + "/api/metrics", Palette: charts.Light}
			v.apply(fetchBench(v.client(), true, 0, time.Minute))
			html := render(t, v)
			checkHTML(t, html, tt.want, tt.notWant)
			if got := disabledRunButtons(html); got != tt.disabledRuns {
				t.Errorf("%d disabled Run buttons, want %d", got, tt.disabledRuns)
			}
		})
	}
}

func f(v float64) *float64 { return &v }

var disabledAttr = regexp.MustCompile(`\sdisabled[\s>]`)

// disabledRunButtons counts Run buttons rendered with the disabled attribute.
func disabledRunButtons(html string) int {
	n := 0
	for _, line := range strings.Split(html, "\n") {
		if strings.Contains(line, `data-action="run"`) && disabledAttr.MatchString(line) {
			n++
		}
	}
	return n
}

// TestBenchViewUpdate: a new palette (theme) re-renders the view without
// asking the API again; a new connection refetches from the new API.
func TestBenchViewUpdate(t *testing.T) {
	var asked [2]atomic.Int32
	apis := make([]string, 2)
	for i := range apis {
		jobs := &bench.JobList{Lease: bench.Lease{Device: fmt.Sprintf("device of backend %d", i)}}
		srv := benchAPI{profiles: []bench.Profile{}, jobs: jobs, history: &bench.HistoryList{}, asked: &asked[i]}.server(t)
		apis[i] = srv.URL + "/api/metrics"
	}

	e := app.NewTestEngine()
	// The native engine runs no OnMount: start as the mount's fetch leaves it.
	v := &BenchView{API: apis[0], Palette: charts.Light, fetchedFrom: apis[0]}
	load := func(c *BenchView) {
		t.Helper()
		if err := e.Load(c); err != nil {
			t.Fatal(err)
		}
		e.ConsumeAll()
	}
	load(v)
	load(&BenchView{API: apis[0], Palette: charts.Dark})
	if n := asked[0].Load(); n != 0 {
		t.Errorf("a palette change asked the API %d times", n)
	}
	load(&BenchView{API: apis[1], Palette: charts.Dark})
	if asked[1].Load() == 0 {
		t.Error("a new connection was not asked")
	}
	if html := app.HTMLString(v); !strings.Contains(html, "device of backend 1") {
		t.Errorf("the view does not show the new backend's answers:\n%s", html)
	}
}

// A run that did not complete shows no best figure and says what went
// wrong; a run's detail lists every figure of shared/bench, warm TTFT
// beside cold; a running job says how long it has run and has left.
func TestBenchHonestFigures(t *testing.T) {
	cell := bench.CompactCell{Key: "m/tree/default", Status: bench.CellMeasured, DecodeTokensPerSecond: f(55.5), TTFTColdMs: f(420), TTFTWarmMs: f(38)}
	history := &bench.HistoryList{Entries: []bench.HistoryEntry{
		{ID: "ok-run", Profile: "standard", Complete: true, StartedAt: 2000, Cells: []bench.CompactCell{cell}},
		{ID: "cut-run", Profile: "standard", Complete: false, ExitCode: 1, StartedAt: 1000,
			Problems: []string{"m/tree/default decode: unstable (spread 31%)", "cancelled"}, Cells: []bench.CompactCell{cell}},
	}}
	srv := benchAPI{profiles: []bench.Profile{}, jobs: &bench.JobList{}, history: history}.server(t)
	v := &BenchView{API: srv.URL + "/api/metrics", Palette: charts.Light}
	v.apply(fetchBench(v.client(), true, 0, time.Minute))
	html := render(t, v)
	ok := regexp.MustCompile(`data-run="ok-run"[^>]*>(?s:.*?)55\.5 tok/s`)
	cut := regexp.MustCompile(`data-run="cut-run"(?s:.*?)</tr>`).FindString(html)
	if !ok.MatchString(html) || strings.Contains(cut, "55.5") || !strings.Contains(cut, "unstable (spread 31%) (+1 more)") {
		t.Errorf("history rows:\n%s", cut)
	}
	v2 := &BenchView{API: v.API, Palette: charts.Light, detail: &history.Entries[0]}
	html = render(t, v2)
	for _, w := range []string{"Warm TTFT ↓", "38.0 ms", "Cold TTFT ↓", "420 ms", "Decode ↑"} {
		if !strings.Contains(html, w) {
			t.Errorf("detail lacks %q", w)
		}
	}
	now := time.UnixMilli(1_764_690_600_000)
	v.clock = clock.NewFake(now)
	for _, tc := range []struct {
		job  bench.Job
		want string
	}{
		{bench.Job{StartedAt: now.Add(-90 * time.Second).UnixMilli(), Progress: 0.25}, "elapsed 1 min 30 s · about 4 min 30 s left"},
		{bench.Job{StartedAt: now.Add(-5 * time.Second).UnixMilli(), Progress: 0}, "elapsed 5 s"},
		// Too early to tell (the first moments are starting and warming up).
		{bench.Job{StartedAt: now.Add(-8 * time.Second).UnixMilli(), Progress: 0.04}, "elapsed 8 s"},
		{bench.Job{StartedAt: now.Add(-8 * time.Second).UnixMilli(), Progress: 0.1}, "elapsed 8 s · about 1 min 12 s left"},
		// Under a second left: no "about 0.0 ms".
		{bench.Job{StartedAt: now.Add(-90 * time.Second).UnixMilli(), Progress: 0.999}, "elapsed 1 min 30 s"},
		{bench.Job{}, "not started"},
	} {
		if got := v.jobTiming(&tc.job); got != tc.want {
			t.Errorf("jobTiming = %q, want %q", got, tc.want)
		}
	}
}

// TestBenchViewNoAnswer: a backend that is not there, or does not answer
// in time, is a readable message naming it in each section of the
// Benchmarks view, never a raw Go or fetch error.
func TestBenchViewNoAnswer(t *testing.T) {
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // never answers: the view's deadline ends the call
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(hang) })
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // nothing listens there any more

	for _, tc := range []struct {
		name, api string
		timeout   time.Duration
		says      string
	}{
		{"unreachable", gone.URL + "/api/metrics", time.Minute, "cannot reach the backend at " + gone.URL + "/api/metrics"},
		{"no answer in time", slow.URL + "/api/metrics", 100 * time.Millisecond, "no answer in time from the backend at " + slow.URL + "/api/metrics"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &BenchView{API: tc.api, Palette: charts.Light}
			v.apply(fetchBench(v.client(), true, 0, tc.timeout))
			html := render(t, v)
			for _, w := range []string{"Profiles unavailable: " + tc.says, "Jobs unavailable: " + tc.says, "History unavailable: " + tc.says} {
				if !strings.Contains(html, w) {
					t.Errorf("missing %q", w)
				}
			}
			for _, raw := range []string{"context deadline", "dial tcp", "fetch", "connection refused"} {
				if strings.Contains(html, raw) {
					t.Errorf("shows the raw %q", raw)
				}
			}
		})
	}
}

// A route that fails after it answered keeps its answer on screen, greyed,
// saying why and as of when; one that never answered says why alone.
func TestBenchViewKeepsWhatItHadWhenTheBackendGoes(t *testing.T) {
	profiles := []bench.Profile{{Name: "smoke", Scope: "all", Cells: 1}}
	history := []bench.HistoryEntry{{ID: "20261202T150000Z-aa", Profile: "smoke", Complete: true, StartedAt: 1764687600000}}
	gone := errors.New("backend unreachable")
	v := &BenchView{}
	v.apply(benchData{fetched: true, profiles: profiles, history: bench.HistoryList{Entries: history}})
	v.apply(benchData{fetched: true, jobsErr: gone, profilesErr: gone, historyErr: gone})
	html := render(t, v)
	for _, w := range []string{`class="view bench stale"`, `data-profile="smoke"`, `data-run="20261202T150000Z-aa"`,
		"History unavailable: backend unreachable; shown as of", "Profiles unavailable: backend unreachable; shown as of",
		"Jobs unavailable: backend unreachable; shown as of"} {
		if !strings.Contains(html, w) {
			t.Errorf("missing %q in\n%s", w, html)
		}
	}
	fresh := &BenchView{}
	fresh.apply(benchData{fetched: true, jobsErr: gone, profilesErr: gone, historyErr: gone})
	if html := render(t, fresh); strings.Contains(html, "bench stale") || !strings.Contains(html, "History unavailable: backend unreachable<") {
		t.Errorf("a view that never had data:\n%s", html)
	}
}

// What a history list left out is said: runs past the server's bound on
// one answer, stored runs it could not read (with their ids), also when
// no run could be listed.
func TestBenchViewHistoryLeftOut(t *testing.T) {
	run := bench.HistoryEntry{ID: "20261202T150000Z-aa", Profile: "smoke", Complete: true, StartedAt: 1764687600000}
	bad := []bench.HistoryProblem{{ID: "20261201T100000Z-bb", Message: "undecodable entry: unexpected end of JSON input"}}
	tests := []struct {
		name      string
		list      bench.HistoryList
		want, not []string
	}{
		{"whole", bench.HistoryList{Entries: []bench.HistoryEntry{run}}, []string{`data-run="20261202T150000Z-aa"`}, []string{"left-out", "bound on one answer", "could not be read"}},
		{"truncated", bench.HistoryList{Entries: []bench.HistoryEntry{run}, Truncated: true},
			[]string{`data-history="truncated"`, "Listed: the newest 1 run; the list reached the server&#39;s bound on one answer (16.0 MiB)"}, []string{"could not be read"}},
		{"unreadable", bench.HistoryList{Entries: []bench.HistoryEntry{run}, Problems: bad},
			[]string{`data-history="unreadable"`, "1 stored run could not be read", "20261201T100000Z-bb: undecodable entry"}, []string{"bound on one answer"}},
		{"nothing readable", bench.HistoryList{Problems: append(bad, bench.HistoryProblem{ID: "x", Message: "y"})},
			[]string{"2 stored runs could not be read", "No finished runs yet."}, nil},
		{"unreadable past the list's bound", bench.HistoryList{Problems: make([]bench.HistoryProblem, bench.MaxListProblems)},
			[]string{"100 or more stored runs could not be read"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := &BenchView{}
			v.apply(benchData{fetched: true, history: tc.list})
			html := render(t, v)
			checkHTML(t, html, tc.want, tc.not)
		})
	}
}

// Before the bench routes first answer, each section says it is loading,
// not that there is nothing: a browser may hold the requests back a while
// (other tabs using up its connections to the backend).
func TestBenchViewLoading(t *testing.T) {
	html := app.HTMLString(&BenchView{API: "http://127.0.0.1:1/api/metrics", Palette: charts.Light})
	for _, w := range []string{"Loading profiles…", "Loading jobs…", "Loading history…"} {
		if !strings.Contains(html, w) {
			t.Errorf("view before any answer lacks %q:\n%s", w, html)
		}
	}
	for _, w := range []string{"No bench-serve profiles", "No run in progress", "No finished runs yet"} {
		if strings.Contains(html, w) {
			t.Errorf("view before any answer claims %q", w)
		}
	}
}

// The time charts shade every time a listed job held the GPU: a running
// one to the end of the axis, an ended one (done or cancelled) to its end;
// a queued job never held it.
func TestBenchRuns(t *testing.T) {
	jobs := []bench.Job{
		{ID: "queued", Status: bench.StatusQueued, CreatedAt: 900},
		{ID: "running", Status: bench.StatusRunning, CreatedAt: 500, StartedAt: 600},
		{ID: "cancelled", Status: bench.StatusCancelled, CreatedAt: 100, StartedAt: 200, FinishedAt: 300},
	}
	got := benchRuns(jobs)
	if want := []charts.Span{{From: 600}, {From: 200, To: 300}}; !reflect.DeepEqual(got, want) {
		t.Errorf("benchRuns = %v, want %v", got, want)
	}
}

// What the API gives as null (a plan that does not load has no scope; an
// imported run may not name its machine) shows as not known, not blank.
func TestBenchViewUnknowns(t *testing.T) {
	v := &BenchView{}
	v.apply(benchData{fetched: true, profiles: []bench.Profile{{Name: "broken", Error: "invalid plan"}}})
	html := render(t, v)
	if !strings.Contains(html, `<td data-label="Scope">`+format.Dash+"</td>") {
		t.Errorf("a profile without a scope:\n%s", html)
	}
	if got := machine(bench.Machine{}); got != "machine not recorded" {
		t.Errorf("machine of none = %q", got)
	}
}
