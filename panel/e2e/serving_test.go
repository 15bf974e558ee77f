package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestServingTimeCharts: posted events fill the Serving view's tiles and
// its time charts (TTFT, TPOT, e2e, prompt and generation tokens/s, queue,
// prefill and decode time, finish reasons, cache use) and the request
// length distribution, with the model's load marked.
func TestServingTimeCharts(t *testing.T) {
	needBrowser(t)
	b := startBackend(t)
	seed(b, "mlx-community/Qwen3-4B-4bit", 2)
	ctx := browser(t)
	start := time.Now()
	navigate(t, ctx, b.URL()+"/")
	waitFrame(t, ctx, "first chart drawn", paintedPixels("chart-throughput")+" > 300", 30*time.Second)
	record(t, fmt.Sprintf("serving: page load to first chart drawn %d ms (wasm as the browser takes it: brotli)", time.Since(start).Milliseconds()))
	waitFrame(t, ctx, "stream live", `document.querySelector("#conn").dataset.state === "live"`, 30*time.Second)
	for key, want := range map[string]string{"ttft": "110 ms", "tpot": "25.0 ms", "prefix": "75.0%", "kv": "50.0%"} {
		waitFrame(t, ctx, key+" tile", fmt.Sprintf(`(%s||"").includes(%q)`, tileValue(key), want), 5*time.Second)
	}
	for _, id := range []string{"chart-ttft", "chart-tpot", "chart-e2e", "chart-token-rates", "chart-queue", "chart-phases",
		"chart-finish", "chart-cache", "chart-lengths"} {
		waitFrame(t, ctx, id+" drawn", paintedPixels(id)+" > 300", 10*time.Second)
	}
	// The model's load is a mark on every time chart, as ECharts holds it.
	for _, id := range []string{"chart-throughput", "chart-ttft", "chart-tpot", "chart-e2e", "chart-token-rates", "chart-queue",
		"chart-phases", "chart-finish", "chart-cache"} {
		if got := chartMarks(t, ctx, id); !contains(got, "load mlx-community/Qwen3-4B-4bit") {
			t.Errorf("%s marks %q, want the model's load", id, got)
		}
	}
	shot(t, ctx, "serving")
}

// chartMarks is the names of the marks on chart id, read from its ECharts
// instance in the frame (the standalone page's element has an open shadow
// root and the frame is of the same origin).
func chartMarks(t *testing.T, ctx context.Context, id string) []string {
	t.Helper()
	var names []string
	evalTop(t, ctx, fmt.Sprintf(`(()=>{const w=document.querySelector("mlx-metrics-panel").shadowRoot.querySelector("iframe").contentWindow;
		const c=w.echarts.getInstanceByDom(w.document.getElementById(%q)); if(!c) return [];
		const ml=(c.getOption().series[0]||{}).markLine; return ml ? ml.data.map(d => d.name) : []})()`, id), &names)
	return names
}

// TestNarrowLayout: at 390 px the Serving view reflows to one column of
// charts and two of tiles; no tile, card or chart overlaps another or
// sticks out of the page, and wide tables scroll inside their card.
func TestNarrowLayout(t *testing.T) {
	needBrowser(t)
	b := startBackend(t)
	seed(b, "mlx-community/Qwen3-4B-4bit", 2)
	seed(b, "org/a-second-model-with-a-rather-long-name-8bit", 1)
	ctx := browser(t)
	if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	navigate(t, ctx, b.URL()+"/")
	waitFrame(t, ctx, "stream live", `document.querySelector("#conn").dataset.state === "live"`, 30*time.Second)
	waitFrame(t, ctx, "per-model table", `!!document.querySelector("[data-model]")`, 5*time.Second)
	waitFrame(t, ctx, "charts drawn", paintedPixels("chart-ttft")+" > 300", 10*time.Second)
	checkAligned(t, ctx, "serving by model")
	var raw string
	if err := inFrame(ctx, `JSON.stringify((()=>{
		const boxes = [...document.querySelectorAll(".tile, .chart-card, .card, .tabs, .conn")].map(e => {
			const r = e.getBoundingClientRect(); return {n: e.className + (e.dataset.tile||e.dataset.chartCard||""), l: r.left, t: r.top, r: r.right, b: r.bottom}});
		const width = document.documentElement.clientWidth, out = [];
		for (const a of boxes) {
			if (a.r > width + 0.5 || a.l < -0.5) out.push("outside: " + a.n);
			for (const c of boxes) {
				if (a === c) continue;
				const inside = c.l >= a.l && c.r <= a.r && c.t >= a.t && c.b <= a.b; // a card holding a table
				if (!inside && a.l < c.r - 0.5 && c.l < a.r - 0.5 && a.t < c.b - 0.5 && c.t < a.b - 0.5 && !(a.l >= c.l && a.r <= c.r && a.t >= c.t && a.b <= c.b))
					out.push(a.n + " overlaps " + c.n);
			}
		}
		const wrap = document.querySelector(".table-wrap");
		return {problems: out, width, tableScrolls: wrap ? getComputedStyle(wrap).overflowX : "none",
			columns: getComputedStyle(document.querySelector(".chart-grid")).gridTemplateColumns.split(" ").length};
	})())`, &raw); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Problems     []string
		Width        float64
		TableScrolls string
		Columns      int
	}
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Problems) > 0 || got.Columns != 1 || got.TableScrolls != "auto" {
		t.Errorf("at %.0f px: %d chart columns, table overflow %q, problems %q", got.Width, got.Columns, got.TableScrolls, got.Problems)
	}
	shot(t, ctx, "390px")
}
