package ui

import (
	"regexp"
	"strings"
	"testing"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/charts"
	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// probes are a cell's raw and chat parity probes: prompt tokens and text
// of each.
func probes(rawTokens int64, rawText string, chatTokens int64, chatText string) []bench.Probe {
	return []bench.Probe{
		{Kind: bench.ProbeRaw, PromptTokens: rawTokens, CompletionTokens: 32, Finish: "length", Text: rawText},
		{Kind: bench.ProbeChat, PromptTokens: chatTokens, CompletionTokens: 32, Finish: "length", Text: chatText},
	}
}

// A run's detail shows a head-to-head per pair of its cells (a tree cell
// and its model's reference): the title with the combined verdict, the
// parity of its probes, and a row per figure both measured, with the ratio
// and the compare rule's verdict and why; a run without a pair shows none.
func TestBenchHeadToHead(t *testing.T) {
	same := probes(12, "abc def", 30, "hello world")
	tests := []struct {
		name  string
		cells []bench.CompactCell
		// title is the pair's heading; parity its line and each probe's.
		title  string
		parity []string
		// rows are the figures' rows by figure key, each cell's text.
		rows      map[string][]string
		want, not []string
	}{
		{
			name: "the candidate faster, at parity",
			cells: []bench.CompactCell{
				{Key: "m/tree/default", Model: "m", Kind: bench.KindTree, Status: bench.CellMeasured,
					DecodeTokensPerSecond: f(60), TTFTColdMs: f(300), TTFTWarmMs: f(20), PeakRssMB: f(900),
					Spread: map[string]bench.Range{"ttft_cold": {Min: 250, Max: 350}}, Probes: same},
				{Key: "m/reference/default", Model: "m", Kind: bench.KindReference, Status: bench.CellMeasured,
					DecodeTokensPerSecond: f(40), TTFTColdMs: f(330), TTFTWarmMs: f(20), PeakRssMB: f(1000),
					Spread: map[string]bench.Range{"ttft_cold": {Min: 300, Max: 360}}, Probes: same},
			},
			title: "m/tree/default against m/reference/default: faster",
			parity: []string{"Parity: parity",
				"raw probe: parity (prompt tokens 12 each, the same 32 generated tokens)",
				"chat probe: parity (prompt tokens 30 each, the same 32 generated tokens)"},
			rows: map[string][]string{
				"decode":    {"Decode ↑", "60.0 tok/s", "40.0 tok/s", "1.50", "faster"},
				"ttft_cold": {"Cold TTFT ↓", "300 ms", "330 ms", "0.91", "same (inside the spread)"},
				"ttft_warm": {"Warm TTFT ↓", "20.0 ms", "20.0 ms", "1.00", "same"},
				"peak_rss":  {"Peak RSS ↓", "900 MiB", "1000 MiB", "0.90", "less"},
			},
			want: []string{`data-verdict="faster"`, `data-parity="parity"`},
			not:  []string{`data-figure="aggregate"`, "No figure was measured in both."},
		},
		{
			name: "parity drift: the tokenizers differ, the candidate slower",
			cells: []bench.CompactCell{
				{Key: "tiny/reference/ollama", Model: "tiny", Kind: bench.KindReference, Status: bench.CellMeasured,
					DecodeTokensPerSecond: f(40), AggregateTokensPerSecond: f(100), Probes: probes(14, "abc def", 30, "hello there")},
				{Key: "tiny/tree/ollama-chars", Model: "tiny", Kind: bench.KindTree, Status: bench.CellMeasured,
					DecodeTokensPerSecond: f(37), AggregateTokensPerSecond: f(50), Probes: probes(12, "abc", 30, "hello world")},
			},
			title: "tiny/tree/ollama-chars against tiny/reference/ollama: slower",
			parity: []string{"Parity: raw: tokenizer drift",
				"raw probe: tokenizer drift (prompt tokens 12 against 14)",
				"chat probe: diverged (equal prompt tokens (30), diverged at char 6)"},
			rows: map[string][]string{
				"decode":    {"Decode ↑", "37.0 tok/s", "40.0 tok/s", "0.93", "same (one sample, under the noise floor x1.1)"},
				"aggregate": {"Aggregate ↑", "50.0 tok/s", "100 tok/s", "0.50", "slower"},
			},
			want: []string{`data-verdict="slower"`, `data-parity="raw: tokenizer drift"`, `<span class="warn">raw: tokenizer drift</span>`},
		},
		{
			name: "a pair with nothing measured in both, not probed",
			cells: []bench.CompactCell{
				{Key: "m/tree/a", Model: "m", Kind: bench.KindTree, Status: bench.CellMeasured, DecodeTokensPerSecond: f(50)},
				{Key: "m/reference/b", Model: "m", Kind: bench.KindReference, Status: bench.CellFailed},
			},
			title:  "m/tree/a against m/reference/b: same",
			parity: []string{"Parity: not probed"},
			want:   []string{"No figure was measured in both."},
			not:    []string{`data-probe=`, "pair-figures"},
		},
		{
			name: "no pair: the reference is another model's",
			cells: []bench.CompactCell{
				{Key: "a/tree/default", Model: "a", Kind: bench.KindTree, Status: bench.CellMeasured, DecodeTokensPerSecond: f(50)},
				{Key: "b/reference/default", Model: "b", Kind: bench.KindReference, Status: bench.CellMeasured, DecodeTokensPerSecond: f(40)},
			},
			not: []string{"Head to head", "head-to-head", "data-pair="},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := bench.HistoryEntry{ID: "run-1", Profile: "p", Complete: true, StartedAt: 1764687600000, Cells: tt.cells}
			v := &BenchView{Palette: charts.Light}
			v.apply(benchData{fetched: true, history: bench.HistoryList{Entries: []bench.HistoryEntry{e}}})
			v.detail = &v.history[0]
			html := unbroken(render(t, v))
			checkHTML(t, html, tt.want, tt.not)
			if tt.title == "" {
				return
			}
			// The text of each match of re's group, as a browser shows it
			// (the test engine's HTML puts each node on a line of its own).
			text := func(re string) []string {
				var out []string
				for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(html, -1) {
					out = append(out, shown(m[1]))
				}
				return out
			}
			if got := text(`(?s)<h4>(.*?)</h4>`); len(got) != 1 || got[0] != tt.title {
				t.Errorf("titles %q, want %q", got, tt.title)
			}
			parity := append(text(`(?s)<p [^>]*class="parity"[^>]*>(.*?)</p>`), text(`(?s)<li data-probe="[a-z]+">(.*?)</li>`)...)
			if strings.Join(parity, "\n") != strings.Join(tt.parity, "\n") {
				t.Errorf("parity\n got %q\nwant %q", parity, tt.parity)
			}
			if n := len(regexp.MustCompile(`data-figure="`).FindAllString(html, -1)); n != len(tt.rows) {
				t.Errorf("%d figure rows, want %d", n, len(tt.rows))
			}
			for key, want := range tt.rows {
				row := regexp.MustCompile(`data-figure="` + key + `"(?s:.*?)</tr>`).FindString(html)
				var got []string
				for _, m := range regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`).FindAllStringSubmatch(row, -1) {
					got = append(got, shown(m[1]))
				}
				if strings.Join(got, " | ") != strings.Join(want, " | ") {
					t.Errorf("%s row\n got %q\nwant %q", key, got, want)
				}
			}
			if bad := misaligned(html); len(bad) > 0 {
				t.Errorf("header and cells aligned differently: %q", bad)
			}
		})
	}
}

// shown is the text of an HTML fragment of the test engine's as a browser
// shows it: without its tags, nor the line break and indentation (two
// spaces a level) the engine puts before each node, so a text's own
// leading space (" against ") stays.
func shown(html string) string {
	html = regexp.MustCompile(`\n(?:  )*`).ReplaceAllString(html, "")
	return strings.TrimSpace(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(html, ""))
}

// A ratio over a reference of zero is not a number: a dash.
func TestPairFigureZeroReference(t *testing.T) {
	f := bench.PairFigure{Figure: bench.Figures[0], Candidate: 5, Reference: 0, Judgement: bench.Judgement{Verdict: bench.VerdictSame}}
	if got := cellTexts(app.HTMLString(pairFigure(f))); len(got) != 5 || got[3] != format.Dash {
		t.Errorf("row over a reference of zero %q, want its ratio a dash", got)
	}
}
