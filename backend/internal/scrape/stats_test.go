package scrape

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/health"
	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// Each target reports its polls and the events they made, accepted or
// rejected: a mapped event outside the events' physical bounds (an
// engine's counter past what an event may carry) is not published.
func TestScraperStats(t *testing.T) {
	const huge = `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 1
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m"} 0
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{model_name="m"} 2e300
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{model_name="m"} 1e300
`
	const flood = `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 1e9
`
	now := time.UnixMilli(1764690000000)
	tests := []struct {
		name               string
		status             int
		body               string // "" serves testdata/vllm-1.txt
		kind               Kind   // the target's
		wantKind           Kind
		accepted, rejected uint64
		failures           uint64
		lastError          string // a part of it
	}{
		{"a vLLM scrape, kind detected", 200, "", KindAuto, KindVLLM, 3, 0, 0, ""},
		{"an engine down", 503, "", KindVLLM, KindVLLM, 0, 0, 1, "503"},
		{"prefix totals past the bounds", 200, huge, KindVLLM, KindVLLM, 1, 1, 0, ""},
		{"a gauge past the bounds", 200, flood, KindVLLM, KindVLLM, 0, 1, 0, ""},
		// An exposition of another kind than given: read as nothing, it
		// used to count as a good poll; the error says what auto reads.
		{"an exposition its kind does not read", 200, "# TYPE sglang_num_running_reqs gauge\nsglang_num_running_reqs{model_name=\"m\"} 1\n",
			KindVLLM, KindVLLM, 0, 0, 1, "none of its 1 metric families is one a vllm engine exposes: it reads as sglang (give the kind sglang, or auto)"},
		{"an exposition no kind reads", 200, "# TYPE go_goroutines gauge\ngo_goroutines 7\n",
			KindAuto, KindAuto, 0, 0, 1, "none of its 1 metric families (go_goroutines) is one vLLM, SGLang (sglang: or sglang_), llama.cpp or mlx-metrics exposes with a model"},
		// Some SGLang releases serve sglang_ names: read as SGLang's.
		{"sglang_ names", 200, "# TYPE sglang_num_running_reqs gauge\nsglang_num_running_reqs{model_name=\"m\"} 1\n",
			KindSGLang, KindSGLang, 1, 0, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var srv *httptest.Server
			if tc.body == "" {
				srv = fixtureServer(t, tc.status, "testdata/vllm-1.txt")
			} else {
				srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/plain; version=0.0.4")
					w.Write([]byte(tc.body))
				}))
				defer srv.Close()
			}
			var published []events.Event
			s := New(Target{URL: srv.URL + "/metrics", Kind: tc.kind, Model: "x"},
				func(ev events.Event) { published = append(published, ev) },
				Options{Clock: clock.NewFake(now), Logger: logging.Discard()})
			s.Poll(context.Background())
			st := s.Stats()
			if st.Polls != 1 || st.Failures != tc.failures || st.Accepted != tc.accepted || st.Rejected != tc.rejected ||
				st.Kind != tc.wantKind || uint64(len(published)) != tc.accepted {
				t.Errorf("stats %+v with %d published, want kind %q, %d accepted, %d rejected, %d failures",
					st, len(published), tc.wantKind, tc.accepted, tc.rejected, tc.failures)
			}
			if !strings.Contains(st.LastError, tc.lastError) || (tc.lastError == "") != (st.LastError == "") {
				t.Errorf("last error %q, want one with %q", st.LastError, tc.lastError)
			}
			if (tc.rejected > 0) != (st.LastRejection != "") {
				t.Errorf("last rejection %q", st.LastRejection)
			}
			if wantAt := map[bool]int64{true: now.UnixMilli(), false: 0}[tc.failures == 0]; st.LastPollAt != wantAt {
				t.Errorf("last poll at %d, want %d", st.LastPollAt, wantAt)
			}
		})
	}
}

// A Group reports every target, in the order given.
func TestGroupStats(t *testing.T) {
	a := fixtureServer(t, 200, "testdata/vllm-1.txt")
	b := fixtureServer(t, 503, "testdata/vllm-1.txt")
	g := NewGroup([]Target{{URL: a.URL + "/metrics", Kind: KindVLLM}, {URL: b.URL + "/metrics"}},
		func(events.Event) {}, Options{Logger: logging.Discard()})
	for _, s := range g.scrapers {
		s.Poll(context.Background())
	}
	st := g.Stats()
	if len(st) != 2 || st[0].URL != a.URL+"/metrics" || st[0].Accepted == 0 || st[1].Failures != 1 {
		t.Errorf("group stats %+v", st)
	}
	// A target whose last poll failed makes /healthz degraded; the
	// section stays the list it was.
	if s := st.Status(); s != "degraded" {
		t.Errorf("status %q with a target failing, want degraded", s)
	}
	if s := st[:1].Status(); s != "ok" {
		t.Errorf("status %q with every target answering, want ok", s)
	}
}

// /healthz is open to anyone: a target's URL is shown without its password
// or query, and its last error without the URL.
func TestStatsHideSecrets(t *testing.T) {
	s := New(Target{URL: "http://u:secret@127.0.0.1:9/metrics?token=secret", Kind: KindVLLM}, func(events.Event) {},
		Options{Logger: logging.Discard()})
	s.Poll(context.Background())
	st := s.Stats()
	if st.URL != "http://u:xxxxx@127.0.0.1:9/metrics?…" || strings.Contains(st.LastError, "secret") || st.LastError == "" {
		t.Errorf("stats %+v", st)
	}
}

// A failing target is logged as the ingest sources' failures are: the
// first at once, then a count a minute, and one line when it answers again.
func TestFailedPollsAreLogged(t *testing.T) {
	up := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write([]byte("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 1\n"))
	}))
	defer srv.Close()
	clk := clock.NewFake(time.UnixMilli(1764690000000))
	var lines []string
	s := New(Target{URL: srv.URL + "/metrics", Kind: KindVLLM}, func(events.Event) {},
		Options{Clock: clk, Logger: logging.Func(func(_ slog.Level, msg string) { lines = append(lines, msg) })})
	for i, step := range []struct {
		up      bool
		advance time.Duration
		polls   int
		want    []string // a part of each line this step writes
	}{
		{false, 0, 1, []string{"scrape " + srv.URL + "/metrics: cannot read the target: status 503 Service Unavailable (further failed polls are counted"}},
		{false, time.Second, 5, nil},
		{false, time.Minute, 1, []string{"5 more failed polls in the last 1 min 00 s; latest: status 503"}},
		{true, time.Second, 1, []string{"1 more failed poll in the last 2.00 s", "answering again"}},
		{true, time.Second, 3, nil},
		{false, time.Second, 1, []string{"cannot read the target: status 503"}},
	} {
		lines, up = nil, step.up
		clk.Advance(step.advance)
		for range step.polls {
			s.Poll(context.Background())
		}
		if len(lines) != len(step.want) {
			t.Fatalf("step %d: lines %q, want %d", i, lines, len(step.want))
		}
		for j, w := range step.want {
			if !strings.Contains(lines[j], w) {
				t.Errorf("step %d: line %q, want one with %q", i, lines[j], w)
			}
		}
	}
}

// Rejected events reach the log as the ingest sources' do: the first at
// once, then a count once a minute, and what is pending when Run ends.
func TestRejectionsAreLogged(t *testing.T) {
	const flood = `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 1e9
`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write([]byte(flood))
	}))
	defer srv.Close()
	clk := clock.NewFake(time.UnixMilli(1764690000000))
	var lines []string
	s := New(Target{URL: srv.URL + "/metrics", Kind: KindVLLM}, func(events.Event) {},
		Options{Clock: clk, Logger: logging.Func(func(_ slog.Level, msg string) { lines = append(lines, msg) })})
	for i, step := range []struct {
		advance time.Duration
		polls   int
		stop    bool   // Run returns
		line    string // a part of the line this step writes; "" for none
	}{
		{0, 1, false, "scrape " + srv.URL + "/metrics: rejected an event: scheduler.sample: active"},
		{time.Second, 2, false, ""},
		{59 * time.Second, 0, false, "2 more events rejected in the last 1 min 00 s"},
		{time.Second, 1, false, ""},
		{0, 0, true, "1 more event rejected in the last 1.00 s"},
	} {
		lines = nil
		clk.Advance(step.advance)
		for range step.polls {
			s.Poll(context.Background())
		}
		if step.stop {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			s.Run(ctx, nil)
		}
		if (len(lines) == 1) != (step.line != "") || len(lines) > 1 || (step.line != "" && !strings.Contains(lines[0], step.line)) {
			t.Errorf("step %d: lines %q, want one with %q", i, lines, step.line)
		}
	}
	if st := s.Stats(); st.Rejected != 4 {
		t.Errorf("rejected %d, want 4", st.Rejected)
	}
}

// /healthz says degraded while a target fails: one that fails every poll,
// one that answers nothing its kind reads; not once each answers.
func TestHealthzDegraded(t *testing.T) {
	const vllm = "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 1\n"
	tests := []struct {
		name   string
		bodies [][]string // per target, what each poll answers ("" a 503)
		kinds  []Kind
		status string
	}{
		{"every target answering", [][]string{{vllm, vllm}, {vllm}}, []Kind{KindVLLM, KindAuto}, "ok"},
		{"a target failing every poll", [][]string{{vllm, vllm, vllm}, {"", "", ""}}, []Kind{KindVLLM, KindVLLM}, health.StatusDegraded},
		{"a target answering nothing its kind reads", [][]string{{"go_goroutines 7\n", "go_goroutines 7\n"}}, []Kind{KindAuto}, health.StatusDegraded},
		{"an SGLang in sglang_ names", [][]string{{strings.ReplaceAll(vllm, "vllm:num_requests_running", "sglang_num_running_reqs")}}, []Kind{KindSGLang}, "ok"},
		{"a target failing, then answering", [][]string{{"", "", vllm}}, []Kind{KindVLLM}, "ok"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var targets []Target
			var polls []int
			for i, bodies := range tc.bodies {
				n := 0
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					body := bodies[min(n, len(bodies)-1)]
					n++
					if body == "" {
						w.WriteHeader(http.StatusServiceUnavailable)
						return
					}
					w.Write([]byte(body))
				}))
				defer srv.Close()
				targets = append(targets, Target{URL: srv.URL + "/metrics", Kind: tc.kinds[i], Model: "x"})
				polls = append(polls, len(bodies))
			}
			clk := clock.NewFake(time.UnixMilli(1764690000000))
			g := NewGroup(targets, func(events.Event) {}, Options{Clock: clk, Logger: logging.Discard()})
			h := health.New(clk.Now(), health.Options{Clock: clk})
			h.Add("scrape", func() any { return g.Stats() })
			for i, s := range g.scrapers {
				for range polls[i] {
					s.Poll(context.Background())
				}
			}
			rep := h.Report()
			if rep["status"] != tc.status {
				t.Errorf("status %v, want %s (%v)", rep["status"], tc.status, rep["scrape"])
			}
			if degraded, _ := rep["degraded"].([]string); (tc.status != "ok") != (len(degraded) == 1 && degraded[0] == "scrape") {
				t.Errorf("degraded %v", rep["degraded"])
			}
		})
	}
}
