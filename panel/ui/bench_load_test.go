package ui

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/panel/charts"
	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// sweepPoint is a measured load point: offered rate, repeat, requests/s
// and output tokens/s carried, TTFT and TPOT p50 and p99 in ms.
func sweepPoint(point, repeat int, rate, reqs, toks, ttft50, ttft99, tpot50, tpot99 float64) bench.LoadPoint {
	return bench.LoadPoint{
		Point: point, Repeat: repeat, OfferedRate: rate, Requests: 20, Completed: 20,
		RequestThroughput: reqs, OutputThroughput: toks,
		TTFT: bench.Dist{Count: 20, Mean: ttft50, Median: ttft50, P90: ttft99, P99: ttft99},
		TPOT: bench.Dist{Count: 20, Median: tpot50, P99: tpot99},
		E2EL: bench.Dist{Count: 20, Median: 2000},
	}
}

// loadRun is a run whose cell swept rates 1 and 2 req/s (1 twice) and 4,
// where it saturated; the search found 2 req/s.
func loadRun(id string, started int64) bench.HistoryEntry {
	sat := sweepPoint(4, 1, 4, 3.1, 310, 900, 2400, 60, 95)
	sat.Saturated, sat.Errors, sat.Search = true, 3, "ladder"
	good := 1.9
	p2 := sweepPoint(2, 1, 2, 1.9, 190, 150, 300, 22, 30)
	p2.Goodput = &good
	p1 := sweepPoint(1, 1, 1, 1, 100, 100, 200, 20, 26)
	p1.RequestsFile = "requests/02-m_tree_load-p01-r1.ndjson"
	return bench.HistoryEntry{ID: id, Profile: "load", Complete: true, StartedAt: started, Cells: []bench.CompactCell{
		{Key: "m/tree/default", Status: bench.CellMeasured},
		{Key: "m/tree/load", Status: bench.CellMeasured,
			LoadPoints: []bench.LoadPoint{p1, sweepPoint(1, 2, 1, 0.98, 96, 110, 220, 21, 28), p2, sat},
			MaxRate:    &bench.MaxRate{Rate: 2, FailedAt: 4, MinShare: 0.95, Points: 3},
			SLO:        &bench.SLO{TTFTMs: 500, TPOTMs: 50},
		},
	}}
}

// A run's cell with load points shows its curves, a row per point, the
// SLO and the max rate found, and the points as a CSV download; another
// listed run with a sweep is offered to compare with.
func TestBenchLoadDetail(t *testing.T) {
	a, b := loadRun("run-a", 1764687600000), loadRun("run-b", 1764684000000)
	v := &BenchView{Palette: charts.Light}
	v.apply(benchData{fetched: true, history: bench.HistoryList{Entries: []bench.HistoryEntry{a, b}}})
	v.detail = &v.history[0]
	html := unbroken(render(t, v))
	checkHTML(t, html, []string{
		`data-load="m/tree/load"`, `id="chart-load-ttft-0"`, `id="chart-load-tpot-0"`,
		"SLO: TTFT ≤ 500 ms, TPOT ≤ 50.0 ms (goodput counts the requests meeting every bound)",
		"Max rate found: 2.00 req/s; failed at 4.00 req/s (a rate passes when its goodput is at least 95.0% of it and the server kept up; 3 points)",
		`data-control="compare"`, ">load · 2025-12-02 14:00 UTC · run-b</option>",
		`download="run-a-m_tree_load-load.csv"`,
		`/bench/run-a/requests/02-m_tree_load-p01-r1.ndjson?format=csv"`,
	}, []string{`data-load="m/tree/default"`, `id="chart-load-ttft-1"`, `data-compare=`})
	// go-app writes a true attribute bare, and attributes in any order.
	checkTags(t, html, [][]string{
		{`data-axis="requests"`, "aria-pressed"}, {`data-axis="tokens"`, `aria-pressed="false"`},
		{`value="-"`, "selected"}, {`value="run-b"`, `selected="false"`},
	})

	rows := map[string][]string{
		"1.1": {"1.00 req/s", "1.00 req/s", "100 tok/s", "100 ms", "200 ms", "20.0 ms", "26.0 ms", "2.00 s", "0", format.Dash, "no", "CSV"},
		"1.2": {"1.00 req/s · repeat 2", "0.98 req/s", "96.0 tok/s", "110 ms", "220 ms", "21.0 ms", "28.0 ms", "2.00 s", "0", format.Dash, "no", ""},
		"2.1": {"2.00 req/s", "1.90 req/s", "190 tok/s", "150 ms", "300 ms", "22.0 ms", "30.0 ms", "2.00 s", "0", "1.90 req/s", "no", ""},
		"4.1": {"4.00 req/s · ladder", "3.10 req/s", "310 tok/s", "900 ms", "2.40 s", "60.0 ms", "95.0 ms", "2.00 s", "3", format.Dash, "yes", ""},
	}
	for point, want := range rows {
		row := regexp.MustCompile(`data-point="` + regexp.QuoteMeta(point) + `"(?s:.*?)</tr>`).FindString(html)
		if got := cellTexts(row); strings.Join(got, " | ") != strings.Join(want, " | ") {
			t.Errorf("point %s row\n got %q\nwant %q", point, got, want)
		}
	}

	href := regexp.MustCompile(`href="(data:text/csv[^"]*)"`).FindStringSubmatch(html)
	if href == nil {
		t.Fatal("no CSV link")
	}
	text, err := url.PathUnescape(strings.TrimPrefix(strings.ReplaceAll(href[1], "&amp;", "&"), "data:text/csv;charset=utf-8,"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) != 5 || lines[0] != strings.Join(loadCSVHeader, ",") ||
		!strings.HasPrefix(lines[4], "run-a,m/tree/load,4,1,ladder,,4,0,20,20,3,0,0,3.1,310,0,0,0,900,900,2400,2400,") ||
		!strings.HasSuffix(lines[3], ",1.9,0,false") || !strings.HasSuffix(lines[4], ",,0,true") {
		t.Errorf("CSV:\n%s", text)
	}

	// Compared with b: A and B, each with its table.
	v2 := &BenchView{Palette: charts.Light, history: v.history, historyAt: v.historyAt, detail: v.detail, compareID: "run-b"}
	html = unbroken(render(t, v2))
	checkHTML(t, html, []string{`data-compare="run-b"`, "A: this run (run-a); B: run-b", `<h4>A: run-a</h4>`, `<h4>B: run-b</h4>`}, nil)
	checkTags(t, html, [][]string{{`value="-"`, `selected="false"`}, {`value="run-b"`, "selected"}})
}

// checkTags fails t unless, for each set of attributes (name=value, or a
// bare name for one go-app writes bare, as it does a true one), one tag
// of html holds them all, in whatever order.
func checkTags(t *testing.T, html string, want [][]string) {
	t.Helper()
	attr := regexp.MustCompile(`\s([a-z-]+)(="[^"]*")?`)
	var tags []map[string]bool
	for _, tag := range regexp.MustCompile(`<[a-z][^>]*>`).FindAllString(html, -1) {
		attrs := map[string]bool{}
		for _, m := range attr.FindAllStringSubmatch(tag, -1) {
			attrs[m[1]+m[2]] = true
		}
		tags = append(tags, attrs)
	}
	for _, w := range want {
		found := false
		for _, attrs := range tags {
			all := true
			for _, a := range w {
				all = all && attrs[a]
			}
			found = found || all
		}
		if !found {
			t.Errorf("no tag holds %q", w)
		}
	}
}

// cellTexts is the text of each td of an HTML row.
func cellTexts(row string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`).FindAllStringSubmatch(row, -1) {
		out = append(out, strings.TrimSpace(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(m[1], "")))
	}
	return out
}

// The curves of a cell: TTFT and TPOT p50 and p99 against the load carried,
// by request rate or output tokens/s, the SLO bound and the max rate as
// markLines; compared with another run, both runs' series by name.
func TestLoadCurvesOptions(t *testing.T) {
	a, b := loadRun("run-a", 2000), loadRun("run-b", 1000)
	b.Cells[1].SLO = &bench.SLO{TTFTMs: 400}
	b.Cells[1].MaxRate.Rate = 1
	tests := []struct {
		name     string
		other    *bench.HistoryEntry
		byTokens bool
		// per chart (TTFT, TPOT): series names, and markLines as name@axis=value
		series [2][]string
		marks  [2][]string
		xName  string
	}{
		{
			name:   "one run by request rate",
			series: [2][]string{{"p50", "p99"}, {"p50", "p99"}},
			marks:  [2][]string{{"SLO 500 ms@yAxis=500", "max 2.00 req/s@xAxis=2"}, {"SLO 50.0 ms@yAxis=50", "max 2.00 req/s@xAxis=2"}},
			xName:  "achieved requests/s",
		},
		{
			name: "one run by output tokens: the max rate at the tokens/s it carried", byTokens: true,
			series: [2][]string{{"p50", "p99"}, {"p50", "p99"}},
			marks:  [2][]string{{"SLO 500 ms@yAxis=500", "max 2.00 req/s@xAxis=190"}, {"SLO 50.0 ms@yAxis=50", "max 2.00 req/s@xAxis=190"}},
			xName:  "output tokens/s",
		},
		{
			name: "compared: both runs' series, each run's SLO and max rate (B's TPOT bound is none)", other: &b,
			series: [2][]string{{"A p50", "A p99", "B p50", "B p99"}, {"A p50", "A p99", "B p50", "B p99"}},
			marks: [2][]string{
				{"A SLO 500 ms@yAxis=500", "A max 2.00 req/s@xAxis=2", "B SLO 400 ms@yAxis=400", "B max 1.00 req/s@xAxis=1"},
				{"A SLO 50.0 ms@yAxis=50", "A max 2.00 req/s@xAxis=2", "B max 1.00 req/s@xAxis=1"},
			},
			xName: "achieved requests/s",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells := loadRuns(a, tt.other)
			if len(cells) != 1 {
				t.Fatalf("%d cells with curves, want 1 (the cell without load points has none)", len(cells))
			}
			l := &LoadCurves{ID: "0", Runs: cells[0], Palette: charts.Light, byTokens: tt.byTokens}
			ttft, tpot := l.options()
			for i, opt := range [][]byte{ttft, tpot} {
				var m struct {
					Series []struct {
						Name     string
						MarkLine struct{ Data []map[string]any }
					}
					XAxis []struct{ Name string }
				}
				if err := json.Unmarshal(opt, &m); err != nil {
					t.Fatal(err)
				}
				var names, marks []string
				for _, s := range m.Series {
					names = append(names, s.Name)
					for _, d := range s.MarkLine.Data {
						for _, axis := range []string{"xAxis", "yAxis"} {
							if v, ok := d[axis]; ok {
								marks = append(marks, fmt.Sprintf("%s@%s=%v", d["name"], axis, v))
							}
						}
					}
				}
				if strings.Join(names, ",") != strings.Join(tt.series[i], ",") {
					t.Errorf("chart %d series %q, want %q", i, names, tt.series[i])
				}
				if strings.Join(marks, ",") != strings.Join(tt.marks[i], ",") {
					t.Errorf("chart %d markLines %q, want %q", i, marks, tt.marks[i])
				}
				if m.XAxis[0].Name != tt.xName {
					t.Errorf("chart %d x axis %q, want %q", i, m.XAxis[0].Name, tt.xName)
				}
			}
		})
	}
}

// The SLO and the search's outcome read as sentences, whatever is missing.
func TestLoadTexts(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{sloText(nil), "No SLO in the plan: no goodput, no SLO lines."},
		{sloText(&bench.SLO{}), "No SLO in the plan: no goodput, no SLO lines."},
		{sloText(&bench.SLO{E2ELMs: 3000}), "SLO: E2EL ≤ 3.00 s (goodput counts the requests meeting every bound)"},
		{maxRateText(bench.MaxRate{FailedAt: 1, MinShare: 0.9, Points: 1, Note: "the first rate failed"}),
			"Max rate found: none passed; failed at 1.00 req/s (a rate passes when its goodput is at least 90.0% of it and the server kept up; 1 point): the first rate failed"},
		{maxRateText(bench.MaxRate{Rate: 16, MinShare: 0.95, Points: 12}),
			"Max rate found: 16.0 req/s (a rate passes when its goodput is at least 95.0% of it and the server kept up; 12 points)"},
		{offered(bench.LoadPoint{OfferedRate: 2, Concurrency: 8, Search: "bisect"}), "2.00 req/s (cap 8) · bisect"},
		{offered(bench.LoadPoint{Concurrency: 16, Repeat: 3}), "16 concurrent · repeat 3"},
		{loadCSVName("20261202T160754Z-fedd33", "org/model:q4 tree"), "20261202T160754Z-fedd33-org_model_q4_tree-load.csv"},
	} {
		if tc.got != tc.want {
			t.Errorf("got  %q\nwant %q", tc.got, tc.want)
		}
	}
}
