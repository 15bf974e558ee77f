package ui

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/charts"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/fleet"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

var (
	tableRe = regexp.MustCompile(`(?s)<table.*?</table>`)
	rowRe   = regexp.MustCompile(`(?s)<tr[\s>].*?</tr>`)
	cellRe  = regexp.MustCompile(`<t([hd])(\s[^>]*)?>`)
	numRe   = regexp.MustCompile(`class="[^"]*\bnum\b`)
)

// misaligned lists the columns of html's tables whose header and cells
// disagree on being numbers (right-aligned, class num).
func misaligned(html string) []string {
	var bad []string
	seen := map[string]bool{}
	for _, table := range tableRe.FindAllString(html, -1) {
		rows := rowRe.FindAllString(table, -1)
		if len(rows) < 2 {
			continue
		}
		head := cellRe.FindAllStringSubmatch(rows[0], -1)
		for _, row := range rows[1:] {
			cells := cellRe.FindAllStringSubmatch(row, -1)
			if len(cells) != len(head) {
				continue // a row spanning columns
			}
			for i, c := range cells {
				col := firstLine(table) + " column " + itoa(i+1)
				if numRe.MatchString(head[i][2]) != numRe.MatchString(c[2]) && !seen[col] {
					seen[col] = true
					bad = append(bad, col)
				}
			}
		}
	}
	return bad
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Every table right-aligns the headers of its number columns, as the
// numbers under them.
func TestNumericHeadersAligned(t *testing.T) {
	busy := recorded(t, "busy")
	two := *busy
	two.Models = []snapshot.Model{
		{Model: "a/one", State: snapshot.StateResident},
		{Model: "b/two", State: snapshot.StateResident},
	}
	cell := bench.CompactCell{Key: "m/tree/default", Status: bench.CellMeasured, DecodeTokensPerSecond: f(55.5)}
	history := &bench.HistoryList{Entries: []bench.HistoryEntry{{ID: "r1", Profile: "smoke", Complete: true, StartedAt: 2000, Cells: []bench.CompactCell{cell}}}}
	srv := benchAPI{profiles: []bench.Profile{{Name: "smoke", Scope: "all", Cells: 2}}, jobs: &bench.JobList{}, history: history}.server(t)
	bv := &BenchView{API: srv.URL + "/api/metrics", Palette: charts.Light, detail: &history.Entries[0]}
	bv.apply(fetchBench(bv.client(), true, 0, time.Minute))
	for _, tc := range []struct {
		name   string
		compo  app.Composer
		tables int
	}{
		{"models", &ModelsView{Snap: busy}, 1},
		{"requests", &RequestsView{Snap: busy}, 3},
		{"serving by model", &ServingView{Snap: &two}, 1},
		{"benchmarks", bv, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			html := render(t, tc.compo)
			if n := len(tableRe.FindAllString(html, -1)); n != tc.tables {
				t.Errorf("%d tables, want %d", n, tc.tables)
			}
			if bad := misaligned(html); len(bad) > 0 {
				t.Errorf("header and cells aligned differently: %q", bad)
			}
		})
	}
}

// Model names wrap at their separators, not inside a word, in every view
// that shows one: each is a model-name span with a break opportunity
// after each separator.
func TestModelNamesWrapAtSeparators(t *testing.T) {
	const name = "mlx-community/Qwen3-4B-4bit"
	const broken = "mlx-\n<wbr></wbr>\ncommunity/\n<wbr></wbr>\nQwen3-\n<wbr></wbr>\n4B-\n<wbr></wbr>\n4bit"
	snap := &snapshot.Snapshot{
		Models:   []snapshot.Model{{Model: name, State: snapshot.StateResident}, {Model: "b", State: snapshot.StateResident}},
		Caches:   []snapshot.Cache{{Model: name, KV: &snapshot.KVCache{Bytes: 1, CapacityBytes: ptr(int64(2))}}},
		Requests: snapshot.Requests{Recent: []snapshot.Recent{{RequestFinished: events.RequestFinished{Model: name, RequestID: "r1", Finish: "stop"}}}},
	}
	cell := bench.CompactCell{Key: name + "/tree/default", Status: bench.CellMeasured}
	entry := bench.HistoryEntry{ID: "r1", Profile: "p", Complete: true, Cells: []bench.CompactCell{cell}}
	bv := &BenchView{profiles: []bench.Profile{{Name: "p", Scope: "scoped", Models: []string{name}}}, profilesAt: time.Unix(1, 0), detail: &entry}
	for _, tc := range []struct {
		name  string
		compo app.Composer
		want  int // names shown
	}{
		{"models", &ModelsView{Snap: snap}, 1},
		{"caches", &CachesView{Snap: snap}, 1},
		{"requests", &RequestsView{Snap: snap}, 1},
		{"serving by model", &ServingView{Snap: snap}, 1},
		{"benchmarks: a profile's models and a cell", bv, 2},
		{"fleet", &FleetView{view: &fleet.View{Enabled: true, Hosts: []fleet.Host{{Host: "h:1", Reporting: true}},
			Rows: []fleet.Row{{Host: "h:1", Model: name}}}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			html := render(t, tc.compo)
			flat := regexp.MustCompile(`\n\s*`).ReplaceAllString(html, "\n")
			if n := strings.Count(flat, broken); n != tc.want {
				t.Errorf("%d names broken at their separators, want %d", n, tc.want)
			}
			if text := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(html, ""); strings.Contains(text, name) {
				t.Error("a name shown without break opportunities")
			}
		})
	}
}

// A name with a word too long for a phone's column may break inside it
// (model-name-unbroken); one whose words are short breaks only after its
// separators.
func TestModelNameUnbroken(t *testing.T) {
	for _, tc := range []struct {
		name     string
		unbroken bool
	}{
		{"mlx-community/Qwen3-30B-A3B-Instruct-2507-4bit-DWQ", false},
		{"reference-sim, mlx-community/Qwen3-4B-4bit", false},
		{"org/AnUnusuallyLongModelNameWithoutSeparators", true},
		{"AnUnusuallyLongModelName", true},
		{"TwentyCharactersLong", false},
	} {
		html := render(t, &ModelsView{Snap: &snapshot.Snapshot{Models: []snapshot.Model{{Model: tc.name, State: snapshot.StateResident}}}})
		if got := strings.Contains(html, "model-name-unbroken"); got != tc.unbroken {
			t.Errorf("%q marked unbroken %v, want %v", tc.name, got, tc.unbroken)
		}
	}
}
