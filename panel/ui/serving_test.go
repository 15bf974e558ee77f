package ui

import (
	"encoding/json"
	"fmt"
	"html"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/panel/charts"
	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// timeline is n intervals of 5 s ending with the one at (at/5000)*5000,
// each sampled samples times at tps tokens/s (the i-th at tps[i%len]).
func timeline(at int64, n int, samples int, tps ...float64) []snapshot.TimelinePoint {
	last := at / 5000 * 5000
	tl := make([]snapshot.TimelinePoint, n)
	for i := range tl {
		tl[i] = snapshot.TimelinePoint{At: last - int64(n-1-i)*5000, Requests: 5}
		if samples > 0 {
			tl[i].Scheduler = &snapshot.IntervalScheduler{Samples: samples, TokensPerSecond: tps[i%len(tps)], Active: 3, Capacity: 16}
		}
	}
	return tl
}

// The Throughput tile is the mean of the scheduler samples of the last
// complete intervals within 30 s, each interval weighted by its samples;
// the interval still filling is left out.
func TestMeanThroughput(t *testing.T) {
	const at = 1_000_002_500 // half way through an interval
	uneven := timeline(at, 8, 5, 100, 200)
	uneven[6].Scheduler.Samples = 15 // the last complete one, at 100 tok/s: three times the samples
	gap := timeline(at, 8, 5, 100, 200)
	for i := 2; i < 7; i++ {
		gap[i].Scheduler = nil
	}
	tests := []struct {
		name string
		tl   []snapshot.TimelinePoint
		want float64
		ok   bool
	}{
		// Intervals 1..6 are complete and within 30 s: 200, 100, 200, 100,
		// 200, 100 (the filling 7th, 200, is left out); the 0th is older.
		{"six intervals, equal samples", timeline(at, 8, 5, 100, 200), 150, true},
		{"weighted by samples", uneven, (5*200 + 5*100 + 5*200 + 5*100 + 5*200 + 15*100) / 40.0, true},
		{"only the sampled intervals", gap, 200, true},
		{"no sample in the window", timeline(at, 8, 0), 0, false},
		{"no timeline", nil, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &snapshot.Snapshot{At: at, IntervalMs: 5000, Timeline: tc.tl}
			got, ok := MeanThroughput(s)
			if got != tc.want || ok != tc.ok {
				t.Errorf("MeanThroughput = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// noteRe finds each chart's caption in the rendered HTML.
var noteRe = regexp.MustCompile(`data-note="([^"]+)"[^>]*>([^<]*)<`)

// notes are the rendered captions by chart ID.
func notes(t *testing.T, page string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range noteRe.FindAllStringSubmatch(page, -1) {
		out[m[1]] = html.UnescapeString(m[2])
	}
	return out
}

// TestServingTenMinutes renders the Serving view from tenminutes.json, the
// snapshot a backend of this version gave after ten minutes of the
// reference engine's default traffic (panel/e2e/testdata's recording), as
// it is, with quiet intervals scattered through it, and as an older
// backend would send it (no minutes, no scheduler per interval). Each
// chart says once what it covers; a quiet stretch is said once per chart,
// however many there are; the Throughput tile is a mean over 30 s.
func TestServingTenMinutes(t *testing.T) {
	quiet := func(s *snapshot.Snapshot) {
		for i := 3; i < len(s.Timeline)-1; i += 8 { // 15 quiet intervals
			p := &s.Timeline[i]
			p.Requests, p.ByFinish = 0, snapshot.FinishCounts{}
			p.TTFTMs, p.TPOTMs, p.TotalMs, p.QueueMs, p.PrefillMs, p.DecodeMs = nil, nil, nil, nil, nil, nil
		}
	}
	older := func(s *snapshot.Snapshot) {
		for i := range s.Timeline {
			s.Timeline[i].Minute, s.Timeline[i].Scheduler = nil, nil
		}
	}
	latency := []string{"chart-ttft", "chart-tpot", "chart-e2e", "chart-queue"}
	tests := []struct {
		name     string
		edit     func(*snapshot.Snapshot)
		tile     string            // the Throughput tile's hint
		notes    map[string]string // a caption's words, by chart
		shaded   []string          // the charts whose caption says what the shade is
		notShown []string
		p99      string // the latency charts' p99 series
		p99Drawn bool   // whether it has a point at one request a second
	}{
		{
			name: "as recorded",
			tile: "mean of the last 30 s, 1 model",
			notes: map[string]string{
				"chart-throughput":  "Mean tokens/s of each 5 s, rows and queue as of its last sample; the last 10 min.",
				"chart-token-rates": "Tokens of the requests finished in each 5 s; the last 10 min.",
				"chart-ttft":        "p50 and p95 of the requests finished in each 5 s, p99 of the minute to it where it holds 20 or more; the last 10 min.",
				"chart-cache":       "KV use as of each 5 s, prefix hits over the lookups of the minute to it; the last 10 min.",
				"chart-lengths":     "The last 200 requests.",
			},
			p99: "p99 (1 min)", p99Drawn: true,
		},
		{
			name:   "quiet intervals",
			edit:   quiet,
			tile:   "mean of the last 30 s",
			notes:  map[string]string{"chart-ttft": "p50 and p95 of the requests finished in each 5 s, p99 of the minute to it where it holds 20 or more; the last 10 min. Shaded: no request finished."},
			shaded: append([]string{"chart-phases"}, latency...),
			p99:    "p99 (1 min)", p99Drawn: true,
		},
		{
			name: "an older backend's",
			edit: func(s *snapshot.Snapshot) { older(s); quiet(s) },
			tile: "latest sample, 1 model",
			notes: map[string]string{
				"chart-throughput": "The scheduler's last 120 samples.",
				"chart-ttft":       "p50 and p95 of the requests finished in each 5 s, p99 where 20 or more finished in it; the last 10 min. Shaded: no request finished.",
				"chart-cache":      "KV use as of each 5 s, prefix hits over the lookups of each 5 s; the last 10 min.",
			},
			shaded:   append([]string{"chart-phases"}, latency...),
			notShown: []string{"mean of the last"},
			// An interval at one request a second holds five: no p99 of its own.
			p99: "p99", p99Drawn: false,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := recorded(t, "tenminutes")
			if tc.edit != nil {
				tc.edit(s)
			}
			v := &ServingView{Snap: s, Palette: charts.Light}
			page := render(t, v)
			checkHTML(t, page, []string{tc.tile}, tc.notShown)
			for _, c := range v.chartList(s) {
				checkOption(t, c.id, c.option(), s, tc.p99, tc.p99Drawn)
			}
			got := notes(t, page)
			if len(got) != 10 {
				t.Errorf("%d captions, want one on each of the 10 charts: %q", len(got), got)
			}
			for id, want := range tc.notes {
				if got[id] != want {
					t.Errorf("%s caption %q, want %q", id, got[id], want)
				}
			}
			for id, note := range got {
				want := 0
				if slices.Contains(tc.shaded, id) {
					want = 1
				}
				if n := strings.Count(note, "Shaded"); n != want {
					t.Errorf("%s caption %q says the shade %d times, want %d", id, note, n, want)
				}
			}
		})
	}
}

// checkOption checks one Serving chart's option drawn from s: no shaded
// stretch labelled; the latency charts' legend p50, p95, then p99 (named
// p99), drawn or not; the tokens/s chart from the window's first interval
// when the timeline carries the scheduler.
func checkOption(t *testing.T, id string, option []byte, s *snapshot.Snapshot, p99 string, p99Drawn bool) {
	t.Helper()
	if id == "chart-lengths" {
		return // not a time chart
	}
	var m struct {
		Series []struct {
			Name     string
			Data     []struct{ Value []any }
			MarkArea *struct {
				Data [][]struct {
					Name  string
					Label struct{ Show *bool }
				}
			}
		}
	}
	if err := json.Unmarshal(option, &m); err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	for _, ser := range m.Series {
		if ser.MarkArea == nil {
			continue
		}
		for _, a := range ser.MarkArea.Data {
			if a[0].Name != "" || a[0].Label.Show == nil || *a[0].Label.Show {
				t.Errorf("%s: a shaded stretch labelled %q", id, a[0].Name)
			}
		}
	}
	drawn := func(i int) (n int, first any) {
		for _, d := range m.Series[i].Data {
			if d.Value[1] != nil {
				if n == 0 {
					first = d.Value[0]
				}
				n++
			}
		}
		return n, first
	}
	switch id {
	case "chart-ttft", "chart-tpot", "chart-e2e", "chart-queue":
		var names []string
		for _, ser := range m.Series {
			names = append(names, ser.Name)
		}
		if want := []string{"p50", "p95", p99}; !slices.Equal(names, want) {
			t.Errorf("%s: legend %q, want %q", id, names, want)
		}
		if n, _ := drawn(2); (n > 0) != p99Drawn {
			t.Errorf("%s: p99 drawn at %d points, want drawn %v", id, n, p99Drawn)
		}
	case "chart-throughput":
		n, first := drawn(0)
		if tl := s.Timeline; charts.SchedulerPerInterval(tl) && (n < len(tl)*9/10 || first != float64(tl[0].At)) {
			t.Errorf("%s: tokens/s at %d of %d intervals from %v, want the window's from %d", id, n, len(tl), first, tl[0].At)
		}
	}
}

// The Throughput tile reads the mean the timeline gives, not the latest
// sample.
func TestThroughputTile(t *testing.T) {
	s := recorded(t, "tenminutes")
	mean, ok := MeanThroughput(s)
	if !ok || mean == s.Schedulers[0].TokensPerSecond {
		t.Fatalf("mean %v (%v), the latest sample %v: the recording no longer tells them apart", mean, ok, s.Schedulers[0].TokensPerSecond)
	}
	html := render(t, &ServingView{Snap: s, Palette: charts.Light})
	if want := fmt.Sprintf(`<div class="tile-value">%s</div>`, format.Rate(mean)); !strings.Contains(html, want) {
		t.Errorf("no %s in the tiles", want)
	}
}
