package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

const xssModel = `<img src=x onerror=alert(1)>`

// seed posts one model with memory, a scheduler sample, caches and a few
// finished requests, so every live view has something to draw.
func seed(b *backend, model string, queued int) {
	m := fmt.Sprintf("%q", model)
	evs := []string{
		event("model.load", `{"model":`+m+`,"phase":"finished","ms":812.5,"weightsBytes":2254857830}`),
		event("model.memory", `{"model":`+m+`,"weightsBytes":2254857830,"kvBytes":536870912,"prefixCacheBytes":134217728}`),
		event("cache.sample", `{"model":`+m+`,"cache":"kv","bytes":536870912,"capacityBytes":1073741824,"hits":null,"misses":null}`),
		event("cache.sample", `{"model":`+m+`,"cache":"prefix","bytes":134217728,"capacityBytes":536870912,"hits":30,"misses":10}`),
	}
	for i := 0; i < 3; i++ {
		evs = append(evs, event("request.finished", fmt.Sprintf(`{"model":%s,"requestId":"seed-%d","finish":"stop","promptTokens":100,"cachedPromptTokens":50,"completionTokens":64,"queueMs":5,"ttftMs":%d,"prefillTokensPerSecond":900,"decodeTokensPerSecond":40,"totalMs":1800}`, m, i, 100+i*10)))
	}
	b.post(evs...)
	sample(b, model, 5, queued, 321.5)
}

func sample(b *backend, model string, active, queued int, tps float64) {
	b.post(event("scheduler.sample", fmt.Sprintf(`{"model":%q,"active":%d,"capacity":8,"queued":%d,"tokensPerSecond":%g}`, model, active, queued, tps)))
}

// tileValue and tileHint are expressions for a tile's figure and the line
// under it. They throw when the tile is missing, so a check of a tile that
// no longer exists fails (waitFrame times out) instead of comparing
// undefined.
func tileValue(key string) string {
	return fmt.Sprintf(`document.querySelector('[data-tile=%q] .tile-value').textContent`, key)
}

func tileHint(key string) string {
	return fmt.Sprintf(`document.querySelector('[data-tile=%q] .tile-hint').textContent`, key)
}

// visibilityHook lets a test hide and show the page. Visibility is the
// browser's, and an override of document.hidden made in the test's
// isolated world is not seen by the page's own, so this runs in the page's
// world of every frame and acts on events the test dispatches (events, not
// globals, cross between worlds).
const visibilityHook = `for (const [type, hidden] of [["e2e-hide", true], ["e2e-show", false]]) {
	document.addEventListener(type, () => {
		Object.defineProperty(document, "hidden", {value: hidden, configurable: true});
		document.dispatchEvent(new Event("visibilitychange"));
	});
}`

// hookVisibility installs visibilityHook in the documents ctx loads next.
func hookVisibility(t *testing.T, ctx context.Context) {
	t.Helper()
	_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: visibilityHook})
	if err != nil {
		t.Fatal(err)
	}
}

func TestStandalonePage(t *testing.T) {
	needBrowser(t)
	b := startBackend(t)
	seed(b, "mlx-community/Qwen3-4B-4bit", 3)
	ctx := browser(t)
	hookVisibility(t, ctx)

	start := time.Now()
	navigate(t, ctx, b.URL()+"/")
	waitFrame(t, ctx, "frame prerendered", `!!document.querySelector("#panel")`, 20*time.Second)
	firstPaint := time.Since(start)
	live := waitFrame(t, ctx, "stream live", `document.querySelector("#conn").dataset.state === "live"`, 30*time.Second) + firstPaint
	// First paint: the frame's first contentful paint (go-app's prerendered
	// page) counted from the top page's navigation.
	var frameFCP, frameOrigin, topOrigin float64
	inFrame(ctx, `(performance.getEntriesByName("first-contentful-paint")[0]||{}).startTime||0`, &frameFCP)
	inFrame(ctx, `performance.timeOrigin`, &frameOrigin)
	evalTop(t, ctx, `performance.timeOrigin`, &topOrigin)
	fcp := frameOrigin - topOrigin + frameFCP
	t.Logf("first paint %.0f ms after navigation; time to live data %s", fcp, live.Round(time.Millisecond))
	record(t, fmt.Sprintf("standalone: panel first paint %.0f ms after navigation, time to live data %d ms", fcp, live.Milliseconds()))

	// One stream, not a default one replaced by the element's connection.
	var h struct {
		Stream struct {
			Connected int `json:"connected"`
		} `json:"stream"`
	}
	b.getJSON("/healthz", &h)
	if h.Stream.Connected != 1 {
		t.Errorf("%d stream connections opened, want 1", h.Stream.Connected)
	}

	// Charts draw: the canvas has painted pixels.
	waitFrame(t, ctx, "throughput chart drawn", paintedPixels("chart-throughput")+" > 500", 10*time.Second)
	shot(t, ctx, "serving")

	// Tiles follow posted events. How fast is logged (usually tens of
	// ms), not asserted: a busy CI machine may take longer than a second.
	for _, q := range []int{17, 42} {
		sample(b, "mlx-community/Qwen3-4B-4bit", 6, q, 400)
		took := waitFrame(t, ctx, fmt.Sprintf("queued tile shows %d", q), tileValue("queued")+fmt.Sprintf(` === "%d"`, q), 10*time.Second)
		t.Logf("queued tile followed a posted sample in %s", took.Round(time.Millisecond))
	}
	// The requests tile counts the finished requests under its rate.
	if before := frameText(t, ctx, `[data-tile="requests"] .tile-hint`); before != "3 finished since start" {
		t.Errorf("requests tile says %q, want the 3 seeded requests finished", before)
	}
	b.post(event("request.finished", `{"model":"mlx-community/Qwen3-4B-4bit","requestId":"late","finish":"length","promptTokens":10,"cachedPromptTokens":0,"completionTokens":5,"queueMs":1,"ttftMs":20,"prefillTokensPerSecond":500,"decodeTokensPerSecond":30,"totalMs":200}`))
	// What is checked is the count, not how fast it came.
	waitFrame(t, ctx, "requests tile counts the new request", tileHint("requests")+` === "4 finished since start"`, 10*time.Second)

	// Leaving a view disposes its charts (ECharts clears its mark on the
	// element); a chart left undisposed keeps its canvas and observer.
	if err := inFrame(ctx, `window.leftChart = document.querySelector("#chart-throughput"); true`, nil); err != nil {
		t.Fatal(err)
	}

	// Every view renders; its charts draw.
	views := []struct {
		tab    string
		charts []string
	}{
		{"models", []string{"chart-memory"}},
		{"caches", []string{"gauge-kv-0", "gauge-prefix-1"}},
		{"requests", nil},
	}
	for _, v := range views {
		click(t, ctx, fmt.Sprintf(`[data-tab=%q]`, v.tab))
		waitFrame(t, ctx, v.tab+" view", fmt.Sprintf(`!!document.querySelector("#view-%s")`, v.tab), 5*time.Second)
		for _, c := range v.charts {
			waitFrame(t, ctx, c+" drawn", paintedPixels(c)+" > 200", 10*time.Second)
		}
		checkAligned(t, ctx, v.tab)
		shot(t, ctx, v.tab)
	}
	waitFrame(t, ctx, "chart of a left view disposed", `!leftChart.isConnected && leftChart.getAttribute("_echarts_instance_") === ""`, 5*time.Second)
	if got := frameText(t, ctx, `[data-timing="ttft"]`); !strings.Contains(got, "Time to first token") {
		t.Errorf("ttft row = %q", got)
	}

	// A hidden page closes its stream (a browser shares six connections to
	// the backend among all its tabs) and opens a new one when shown.
	for _, hidden := range []bool{true, false} {
		event := map[bool]string{true: "e2e-hide", false: "e2e-show"}[hidden]
		if err := inFrame(ctx, fmt.Sprintf(`document.dispatchEvent(new Event(%q)); true`, event), nil); err != nil {
			t.Fatal(err)
		}
		state := map[bool]string{true: "paused", false: "live"}[hidden]
		waitFrame(t, ctx, "stream "+state, fmt.Sprintf(`document.querySelector("#conn").dataset.state === %q`, state), 10*time.Second)
	}
	b.getJSON("/healthz", &h)
	if h.Stream.Connected != 2 {
		t.Errorf("%d stream connections opened, want 2: the first, and one after the page showed again", h.Stream.Connected)
	}
}

// TestEventTextIsText posts a model whose name is markup: it must show as
// those characters, never become an element or run.
func TestEventTextIsText(t *testing.T) {
	needBrowser(t)
	b := startBackend(t)
	seed(b, xssModel, 1)
	b.post(event("model.load", fmt.Sprintf(`{"model":"evil2","phase":"failed","error":%q}`, `<script>alert(2)</script><b>bold</b>`)))
	ctx := browser(t)
	navigate(t, ctx, b.URL()+"/metrics")
	waitFrame(t, ctx, "stream live", `document.querySelector("#conn").dataset.state === "live"`, 30*time.Second)
	click(t, ctx, `[data-tab="models"]`)
	waitFrame(t, ctx, "models view", `!!document.querySelector("#view-models .model-name")`, 5*time.Second)

	var names []string
	if err := inFrame(ctx, `[...document.querySelectorAll("#view-models .model-name")].map(e => e.textContent)`, &names); err != nil {
		t.Fatal(err)
	}
	if !contains(names, xssModel) {
		t.Errorf("model names %q: want %q as text", names, xssModel)
	}
	var injected int
	if err := inFrame(ctx, `document.querySelectorAll('img[src="x"], #view-models b, #view-models script').length`, &injected); err != nil {
		t.Fatal(err)
	}
	if injected != 0 {
		t.Errorf("%d elements made from event text", injected)
	}
	if got := frameText(t, ctx, `#view-models .error-text:not(:empty)`); got != `<script>alert(2)</script><b>bold</b>` {
		t.Errorf("last error shows %q", got)
	}
	shot(t, ctx, "models-markup-as-text")
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// record appends a measured figure to out/e2e/timings.txt for the README.
func record(t *testing.T, line string) {
	f, err := os.OpenFile(filepath.Join(outDir, "timings.txt"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Log(err)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s\n", time.Now().UTC().Format(time.RFC3339), line)
}
