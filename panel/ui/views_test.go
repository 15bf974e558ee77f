package ui

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/charts"
	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// recorded loads testdata/<name>.json (for "recorded", the store's golden
// file), a snapshot as the stream sends it.
func recorded(t *testing.T, name string) *snapshot.Snapshot {
	t.Helper()
	path := filepath.Join("testdata", name+".json")
	if name == "recorded" {
		// The store's golden file itself, not a copy: an -update there
		// reaches these tests at once.
		path = filepath.Join("..", "..", "backend", "internal", "store", "testdata", "recorded.golden.json")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s snapshot.Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// render mounts c in a test engine and returns its HTML.
func render(t *testing.T, c app.Composer) string {
	t.Helper()
	e := app.NewTestEngine()
	if err := e.Load(c); err != nil {
		t.Fatal(err)
	}
	e.ConsumeAll()
	return app.HTMLString(c)
}

func ptr[T any](v T) *T { return &v }

var breakOpportunity = regexp.MustCompile(`\s*<wbr></wbr>\s*`)

// unbroken is html with the break opportunities inside model names taken
// out, so a name reads whole ("org/name-variant").
func unbroken(html string) string { return breakOpportunity.ReplaceAllString(html, "") }

const xss = "<img src=x onerror=alert(1)>"

// checkHTML fails the test for each of want html lacks and each of notWant
// it has.
func checkHTML(t *testing.T, html string, want, notWant []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(html, w) {
			t.Errorf("missing %q in\n%s", w, html)
		}
	}
	for _, w := range notWant {
		if strings.Contains(html, w) {
			t.Errorf("unexpected %q in\n%s", w, html)
		}
	}
}

func TestViews(t *testing.T) {
	busy := recorded(t, "busy")
	empty := recorded(t, "empty")
	one := &snapshot.Snapshot{
		Schedulers: []snapshot.Scheduler{{SchedulerSample: events.SchedulerSample{Model: "m", Active: 1, Capacity: 1}}},
		Requests:   snapshot.Requests{Finished: 1, Window: snapshot.Window{Size: 200, Count: 1}},
	}
	tests := []struct {
		name    string
		compo   app.Composer
		want    []string
		notWant []string
	}{
		{
			name:  "serving busy",
			compo: &ServingView{Snap: busy, Palette: charts.Light},
			want: []string{
				`data-tile="throughput"`, "327 tok/s",
				`data-tile="rows"`, ">100.0%<", "8 of 8 rows decoding",
				`data-tile="queued"`, ">7<",
				`data-tile="requests"`, "1,234 finished since start",
				`data-tile="ttft"`, `data-tile="tpot"`, `data-tile="e2e"`, `data-tile="kv"`, `data-tile="prefix"`,
				`data-tile="models"`, "of 3 known",
				`id="chart-throughput"`,
			},
		},
		{
			name:    "serving empty",
			compo:   &ServingView{Snap: empty},
			want:    []string{"0.00 tok/s", "no scheduler sample", "Nothing measured yet."},
			notWant: []string{`id="chart-throughput"`},
		},
		{
			name:  "serving before the first snapshot",
			compo: &ServingView{},
			want:  []string{"Waiting for the first snapshot"},
		},
		{
			name:  "models",
			compo: &ModelsView{Snap: busy, Palette: charts.Light},
			want: []string{
				"mlx-community/Qwen3-4B-4bit", "state-resident", "1.84 s", "212 ms (evicted)", "2.06 s",
				"2.10 GiB", "0.50 GiB", "0.12 GiB", "state-failed", // one unit: the chart's
				"&lt;b&gt;load failed&lt;/b&gt;: weights not found",
				"&lt;img src=x onerror=alert(1)&gt;",
				`id="chart-memory"`,
				`class="muted">—</td>`, // no error: a dash, as any cell without a value
			},
			notWant: []string{xss, "<b>load failed</b>"},
		},
		{
			name:  "models empty",
			compo: &ModelsView{Snap: empty},
			want:  []string{"No model has reported yet."},
		},
		{
			name:  "caches",
			compo: &CachesView{Snap: busy, Palette: charts.Light},
			want: []string{
				`data-cache="kv"`, "0.50 GiB of 1.00 GiB", `id="gauge-kv-0"`,
				`data-cache="prefix"`, "128.0 MiB of 512.0 MiB", "hit rate 78.0% (312 of 400 prompt tokens looked up were cached)", `id="gauge-prefix-1"`,
			},
		},
		{
			name: "caches reported as a ratio",
			compo: &CachesView{Snap: &snapshot.Snapshot{Caches: []snapshot.Cache{{
				Model: "vllm-model", KV: &snapshot.KVCache{UsageRatio: ptr(0.42)},
			}}}},
			want:    []string{"42.0% in use (reported as a ratio)", `id="gauge-kv-0"`},
			notWant: []string{"no capacity reported"},
		},
		{
			name:  "caches empty",
			compo: &CachesView{Snap: empty},
			want:  []string{"No cache has reported yet."},
		},
		{
			name:  "requests",
			compo: &RequestsView{Snap: busy},
			want: []string{
				"over the last 256 of 1234 finished requests (window 256); 34.0% of prompt tokens cached",
				`data-timing="queue"`, "12.5 ms", "180 ms", "403 ms", "611 ms",
				`data-timing="ttft"`, "150 ms", "521 ms", "880 ms", "1.32 s",
				`data-timing="decode"`, "42.1 tok/s", "30.2 tok/s", "21.7 tok/s", "18.4 tok/s", "the slow requests are the low tail",
				`data-timing="total"`, "15.0 s",
				`data-finish="stop"`, "1,100 · 89.1%", `data-finish="error"`,
				"req-1234", "1,024 (0)", "&lt;img src=x onerror=alert(1)&gt;",
			},
			notWant: []string{xss},
		},
		{
			name:  "serving in the singular",
			compo: &ServingView{Snap: one, Palette: charts.Light},
			want:  []string{"latest sample, 1 model<", "1 of 1 row decoding", "last 1 request<"},
		},
		{
			name:  "requests in the singular",
			compo: &RequestsView{Snap: one},
			want:  []string{"over the last 1 of 1 finished request (window 200)"},
		},
		{
			name:  "requests empty window",
			compo: &RequestsView{Snap: empty},
			want:  []string{"not measured in this window", "No finished requests yet."},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			html := unbroken(render(t, tt.compo))
			checkHTML(t, html, tt.want, tt.notWant)
		})
	}
}

// TestRecordedSnapshot renders every view from recorded.json, the store's
// golden snapshot of a recorded event stream (backend/internal/store).
func TestRecordedSnapshot(t *testing.T) {
	rec := recorded(t, "recorded")
	tests := []struct {
		name  string
		compo app.Composer
		want  []string
	}{
		{"serving", &ServingView{Snap: rec}, []string{"0.00 tok/s", "0 of 8 rows decoding", ">3<", "260 finished", "of 2 known", `id="chart-throughput"`}},
		{"models", &ModelsView{Snap: rec}, []string{"llama-3.2-3b", "state-unloaded", "qwen2.5-7b", "state-resident", "5.47 s", "7.08 GiB", "0.03 GiB"}},
		{"caches", &CachesView{Snap: rec}, []string{"61.0 MiB of 976.6 MiB", "30.5 MiB of 244.1 MiB", "hit rate 82.7% (115 of 139 prompt tokens looked up were cached)"}},
		{"requests", &RequestsView{Snap: rec}, []string{
			"over the last 200 of 260 finished requests (window 200); 33.2% of prompt tokens cached",
			"59.3 ms", "115 ms", "120 ms", "421 ms", "828 ms", "885 ms", "892 ms", "3,661 tok/s", "53.8 tok/s", "11.0 s",
			`data-finish="stop"`, "211 · 81.2%", `data-finish="error"`, "5 · 1.9%",
			"req-00260", "1,579 (789)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			html := unbroken(render(t, tt.compo))
			for _, w := range tt.want {
				if !strings.Contains(html, w) {
					t.Errorf("missing %q", w)
				}
			}
		})
	}
}

// TestReferenceSnapshot renders the views from reference.json, a snapshot
// recorded from `serve --reference-engine` (synthetic traffic).
func TestReferenceSnapshot(t *testing.T) {
	ref := recorded(t, "reference")
	tests := []struct {
		name  string
		compo app.Composer
		want  []string
	}{
		{"serving", &ServingView{Snap: ref}, []string{"202 tok/s", "2 of 16 rows decoding", ">12.5%<", "29 finished since start", "of 1 known"}},
		{"models", &ModelsView{Snap: ref}, []string{"reference-sim", "state-resident", "400 ms", "4.00 GiB", "0.23 GiB", "1.60 GiB"}},
		{"caches", &CachesView{Snap: ref}, []string{"0.23 GiB of 8.00 GiB", "1.60 GiB of 2.00 GiB", "hit rate 23.7%"}},
		{"requests", &RequestsView{Snap: ref}, []string{`data-finish="length"`, "29 · 100.0%", `data-timing="ttft"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			html := unbroken(render(t, tt.compo))
			for _, w := range tt.want {
				if !strings.Contains(html, w) {
					t.Errorf("missing %q", w)
				}
			}
		})
	}
}

func TestRequestsPerModel(t *testing.T) {
	rec := recorded(t, "recorded")
	if len(rec.Requests.Window.PerModel) < 2 { // the store's golden recording is what this tests
		t.Fatalf("the recorded snapshot has %d per-model windows, want at least 2", len(rec.Requests.Window.PerModel))
	}
	tests := []struct {
		model string
		want  []string
	}{
		{"", []string{`data-control="timings-model"`, "all models", "over the last 200 of 260"}},
		{"qwen2.5-7b", []string{"of the last 200 finished requests (window 200)"}},
	}
	for _, tt := range tests {
		html := render(t, &RequestsView{Snap: rec, model: tt.model})
		for _, w := range tt.want {
			if !strings.Contains(html, w) {
				t.Errorf("model %q: missing %q", tt.model, w)
			}
		}
	}
}

func TestRecentNewestFirst(t *testing.T) {
	html := render(t, &RequestsView{Snap: recorded(t, "busy")})
	a, b := strings.Index(html, "req-1234"), strings.Index(html, "req-1232")
	if a < 0 || b < 0 || a > b {
		t.Fatalf("req-1234 (newest) at %d, req-1232 at %d: want newest first", a, b)
	}
}

func TestPanelStates(t *testing.T) {
	now := time.UnixMilli(1764690060000)
	busy := recorded(t, "busy")
	eventsURL := DefaultConnection.EventsURL
	// The same figures, from a backend that follows a host: reached, and
	// not reached.
	following := func(state string) *snapshot.Snapshot {
		s := *busy
		s.Sources = []snapshot.Source{{Kind: snapshot.SourceFollow, Host: "127.0.0.1:9", State: state, Since: 1764690060000,
			FailedAttempts: 5, Error: "dial tcp 127.0.0.1:9: connect: connection refused"}}
		return &s
	}
	tests := []struct {
		name    string
		setup   func(p *Panel)
		want    []string
		notWant []string
	}{
		{"waiting", func(p *Panel) {}, []string{`data-state="waiting"`, "waiting for data", "Waiting for the first snapshot"}, nil},
		{"live", func(p *Panel) { p.Apply(busy, now) }, []string{`data-state="live"`, ">live<", "updated 15:40:59", "327 tok/s"}, nil},
		{"interrupted keeps the last snapshot", func(p *Panel) {
			p.Apply(busy, now)
			p.Interrupt(now)
		}, []string{`data-state="interrupted"`, "stream lost at 15:41:00: cannot reach " + eventsURL + "; retrying in 500 ms (attempt 1)", "327 tok/s"}, nil},
		// The page hidden: the stream closed, the figures kept, dimmed.
		{"paused keeps the last snapshot", func(p *Panel) { p.Apply(busy, now); p.pause() },
			[]string{`data-state="paused"`, ">paused<", "while the page is hidden", "327 tok/s", `class="body stale"`}, nil},
		{"retrying", func(p *Panel) {
			p.Interrupt(now) // the first retry's stream lost too
			p.retry()
			p.Interrupt(now.Add(time.Second))
			if !p.retry() {
				t.Error("an interrupted stream's retry did not start")
			}
		}, []string{`data-state="retrying"`, "stream lost at 15:41:00: cannot reach " + eventsURL + "; reconnecting (attempt 2)"}, nil},
		{"live with a frame that failed to decode", func(p *Panel) {
			p.Apply(busy, now)
			p.lastErr = "bad snapshot: unexpected end of JSON input"
		}, []string{`data-state="live"`, "updated 15:40:59; bad snapshot: unexpected end of JSON input", "327 tok/s"}, nil},
		{"waiting after a frame that failed to decode", func(p *Panel) {
			p.lastErr = "bad snapshot: unexpected end of JSON input"
		}, []string{`data-state="waiting"`, "bad snapshot: unexpected end of JSON input"}, nil},
		{"models tab", func(p *Panel) { p.Apply(busy, now); p.SetTab("models") }, []string{`id="view-models"`, "Memory per model"}, nil},
		{"caches tab", func(p *Panel) { p.Apply(busy, now); p.SetTab("caches") }, []string{`id="view-caches"`}, nil},
		{"requests tab", func(p *Panel) { p.Apply(busy, now); p.SetTab("requests") }, []string{`id="view-requests"`}, nil},
		{"live, its event source not reached: not live", func(p *Panel) { p.Apply(following(snapshot.SourceUnreached), now) },
			[]string{`data-state="unreached"`, ">source not reached<",
				"backend live; cannot reach the event source 127.0.0.1:9 since 15:41:00 (dial tcp 127.0.0.1:9: connect: connection refused), 5 failed attempts; retrying", "327 tok/s"},
			[]string{">live<", "updated 15:40:59"}},
		{"live, its event source reached", func(p *Panel) { p.Apply(following(snapshot.SourceConnected), now) },
			[]string{`<span class="conn-label">live</span>`, "updated 15:40:59"}, []string{"not reached"}},
		{"interrupted wins over a source not reached", func(p *Panel) {
			p.Apply(following(snapshot.SourceUnreached), now)
			p.Interrupt(now)
		}, []string{`<span class="conn-label">interrupted</span>`}, []string{"not reached"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPanel(DefaultConnection, "")
			p.jitter = func() float64 { return 1 } // the whole doubled wait
			tt.setup(p)
			checkHTML(t, render(t, p), tt.want, tt.notWant)
		})
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		failures int
		jitter   float64
		want     time.Duration
	}{
		{0, 1, 500 * time.Millisecond}, {1, 1, time.Second}, {2, 1, 2 * time.Second}, {3, 1, 4 * time.Second},
		{4, 1, 5 * time.Second}, {40, 1, 5 * time.Second},
		{0, 0, 250 * time.Millisecond}, {3, 0, 2 * time.Second}, {3, 0.5, 3 * time.Second}, {40, 0, 2500 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := backoff(tt.failures, tt.jitter); got != tt.want {
			t.Errorf("backoff(%d, %g) = %v, want %v", tt.failures, tt.jitter, got, tt.want)
		}
	}
}

// The Serving view over a recorded session: every tile, the time charts
// from the timeline, and the model marks on them.
func TestServingTimeline(t *testing.T) {
	rec := recorded(t, "recorded")
	html := render(t, &ServingView{Snap: rec, Palette: charts.Light})
	for _, w := range []string{
		`id="chart-ttft"`, `id="chart-tpot"`, `id="chart-e2e"`, `id="chart-finish"`, `id="chart-cache"`,
		`data-tile="ttft"`, "TTFT p50 · p95 · p99", "421 ms", "828 ms", "885 ms",
		`data-tile="kv"`, `data-tile="prefix"`, "82.7%",
	} {
		if !strings.Contains(html, w) {
			t.Errorf("missing %q", w)
		}
	}
	if strings.Contains(html, "Nothing measured yet.") {
		t.Error("a chart is empty although the timeline has points")
	}
	if r, ok := RequestsPerSecond(rec); !ok || r <= 0 {
		t.Errorf("requests per second %v %v", r, ok)
	}
}

func TestServingPerModelAndLease(t *testing.T) {
	two := &snapshot.Snapshot{
		At: 1_764_690_000_000,
		Models: []snapshot.Model{
			{Model: "mlx-community/Qwen3-4B-4bit", State: snapshot.StateResident, Loads: 1},
			{Model: "org/other-model", State: snapshot.StateResident, Loads: 1},
		},
		Schedulers: []snapshot.Scheduler{{SchedulerSample: events.SchedulerSample{Model: "org/other-model", Active: 2, Capacity: 8, TokensPerSecond: 50}}},
		Caches:     []snapshot.Cache{{Model: "org/other-model", KV: &snapshot.KVCache{Bytes: 1, CapacityBytes: ptr(int64(4))}}},
	}
	for _, tc := range []struct {
		name    string
		snap    *snapshot.Snapshot
		lease   *bench.Lease
		want    []string
		notWant []string
	}{
		{"two resident models: a breakdown", two, nil,
			[]string{`data-model="org/other-model"`, "By model", "2 / 8", "25.0%", "<wbr>"},
			[]string{`data-lease="held"`}},
		{"one resident model: no breakdown", &snapshot.Snapshot{Models: two.Models[:1]}, nil,
			nil, []string{"By model"}},
		{"a bench run holds the GPU", &snapshot.Snapshot{}, &bench.Lease{Held: true, Holder: "run-7", Since: 1_764_690_000_000},
			[]string{`data-lease="held"`, "job run-7"}, nil},
		{"the lease is free", &snapshot.Snapshot{}, &bench.Lease{}, nil, []string{`data-lease="held"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			html := render(t, &ServingView{Snap: tc.snap, Lease: tc.lease})
			checkHTML(t, html, tc.want, tc.notWant)
		})
	}
}

// A lost stream marks every figure stale, keeps the time of the loss
// through the retries, and names the URL it cannot reach.
func TestStaleAfterLoss(t *testing.T) {
	p := NewPanel(Connection{APIBase: "http://127.0.0.1:9/api/metrics", EventsURL: "http://127.0.0.1:9/api/metrics/stream"}, "")
	snap := &snapshot.Snapshot{At: 1_764_690_000_000}
	t0 := time.UnixMilli(1_764_690_001_000)
	p.Apply(snap, t0)
	if p.Stale() {
		t.Fatal("stale while live")
	}
	p.Interrupt(t0.Add(time.Second))
	first := p.lastErr
	p.state = StateRetrying
	p.Interrupt(t0.Add(time.Minute)) // the retry failed too
	if p.lastErr != first || !strings.Contains(first, format.Clock(t0.Add(time.Second).UnixMilli())) ||
		!strings.Contains(first, "cannot reach http://127.0.0.1:9/api/metrics/stream") {
		t.Errorf("after the retry %q; first %q", p.lastErr, first)
	}
	html := render(t, p)
	for _, w := range []string{`class="body stale"`, `data-stale`, "as of " + format.Clock(snap.At)} {
		if !strings.Contains(html, w) {
			t.Errorf("missing %q", w)
		}
	}
	p.Apply(snap, t0.Add(2*time.Minute))
	if p.Stale() || p.bodyClass() != "body" {
		t.Error("still stale after a snapshot")
	}
}

// A new connection forgets the old one's loss: its stream's loss time and
// URL are not carried over to the new stream's first failure.
func TestSetConnectionForgetsTheLoss(t *testing.T) {
	old := Connection{APIBase: "http://127.0.0.1:9/api/metrics", EventsURL: "http://127.0.0.1:9/api/metrics/stream"}
	next := Connection{APIBase: "http://127.0.0.1:10/api/metrics", EventsURL: "http://127.0.0.1:10/api/metrics/stream"}
	p := NewPanel(old, "")
	t0 := time.UnixMilli(1_764_690_000_000)
	p.Apply(&snapshot.Snapshot{At: t0.UnixMilli()}, t0)
	p.Interrupt(t0.Add(time.Second))
	if p.SetConnection(old) {
		t.Error("the same connection counted as a change")
	}
	if !p.SetConnection(next) {
		t.Fatal("a new connection not taken")
	}
	if p.snap != nil || p.state != StateWaiting || p.failures != 0 || p.lastErr != "" || !p.lostAt.IsZero() {
		t.Errorf("after the switch: snap %v, state %s, failures %d, error %q, lost at %v", p.snap != nil, p.state, p.failures, p.lastErr, p.lostAt)
	}
	later := t0.Add(time.Hour)
	p.Interrupt(later)
	if want := "stream lost at " + format.Clock(later.UnixMilli()) + ": cannot reach " + next.EventsURL; p.lastErr != want {
		t.Errorf("the new stream's loss reads %q, want %q", p.lastErr, want)
	}
}
