package e2e

import (
	"fmt"

	"github.com/chromedp/chromedp"
	"strings"
	"testing"
	"time"
)

// TestManyModels: a host with 1,024 models, one of them named with 256
// characters and no separator. The Caches view draws a bounded number of
// gauges and lists every cache in a table (the first 50 until "Show all"), and no view grows wider than
// the window (the long name wraps; the model picker is cut).
func TestManyModels(t *testing.T) {
	needBrowser(t)
	b := startBackend(t)
	long := strings.Repeat("w", 256)
	var evs []string
	for i := range 1024 {
		m := fmt.Sprintf("%q", fmt.Sprintf("org/model-%04d", i))
		if i == 1023 {
			m = fmt.Sprintf("%q", long)
		}
		evs = append(evs,
			event("model.load", `{"model":`+m+`,"phase":"finished","ms":800,"weightsBytes":2254857830}`),
			event("cache.sample", fmt.Sprintf(`{"model":%s,"cache":"kv","bytes":%d,"capacityBytes":1048576,"hits":null,"misses":null}`, m, i*1024)),
			event("cache.sample", `{"model":`+m+`,"cache":"prefix","bytes":1024,"capacityBytes":1048576,"hits":3,"misses":1}`),
		)
		if i >= 1022 {
			evs = append(evs,
				event("scheduler.sample", `{"model":`+m+`,"active":1,"capacity":8,"queued":0,"tokensPerSecond":40}`),
				event("request.finished", `{"model":`+m+`,"requestId":"r","finish":"stop","promptTokens":10,"cachedPromptTokens":0,"completionTokens":8,"queueMs":1,"ttftMs":50,"prefillTokensPerSecond":900,"decodeTokensPerSecond":40,"totalMs":400}`))
		}
	}
	b.post(evs...)

	ctx := browser(t)
	openPanel(t, ctx, b, false, 1440)
	click(t, ctx, `[data-tab="caches"]`)
	took := waitFrame(t, ctx, "the first caches in the table", `document.querySelectorAll("#view-caches tr[data-model]").length === 50`, time.Minute)
	t.Logf("the Caches view of 1,024 models shown %v after the click (logged, not asserted)", took.Round(time.Millisecond))
	// The table renders the first 50 caches (ui.MaxRows) until asked for all.
	click(t, ctx, `[data-action="rows-caches"]`)
	waitFrame(t, ctx, "every cache in the table", `document.querySelectorAll('#view-caches tr[data-model]').length === 2048`, time.Minute)
	var gauges int
	if err := inFrame(ctx, `document.querySelectorAll('#view-caches .chart-gauge').length`, &gauges); err != nil {
		t.Fatal(err)
	}
	if gauges != 16 {
		t.Errorf("%d gauges drawn, want 16", gauges)
	}
	// The fullest KV caches are the last models'.
	waitFrame(t, ctx, "the fullest cache's gauge drawn", paintedPixels("gauge-kv-2046")+" > 200", 10*time.Second)
	// Then the first 16 models' caches fill up, and the set shifts by one
	// (model 0 empties, model 16 fills): each element is reused under the
	// ID its neighbour had, and every gauge is still drawn (an element
	// disposes only its own chart, not the one drawn under its old ID).
	kv := func(i, bytes int) string {
		return event("cache.sample", fmt.Sprintf(`{"model":"org/model-%04d","cache":"kv","bytes":%d,"capacityBytes":1048576,"hits":null,"misses":null}`, i, bytes))
	}
	var full []string
	for i := range 16 {
		full = append(full, kv(i, 1048576))
	}
	for _, step := range []struct {
		events []string
		from   int // the first model gauged
	}{{full, 0}, {[]string{kv(0, 0), kv(16, 1048576)}, 1}} {
		b.post(step.events...)
		for i := step.from; i < step.from+16; i++ {
			id := fmt.Sprintf("gauge-kv-%d", 2*i)
			waitFrame(t, ctx, id+" drawn after the gauges changed", paintedPixels(id)+" > 200", 10*time.Second)
		}
	}

	// Then every gauge's cache changes once more and nothing after: each
	// gauge, out of view or not, shows the new fill once scrolled to. A
	// reused element's watch is its own: ending the watch of the ID it had
	// must not end another element's watch under that ID (it did: the
	// gauge that took a neighbour's ID kept its old value below the fold).
	var almost []string
	for i := 1; i <= 16; i++ {
		almost = append(almost, kv(i, 1048575)) // 99.9 %, still the fullest 16
	}
	if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(1440, 400)); err != nil {
		t.Fatal(err) // most gauges out of view
	}
	waitTop(t, ctx, "a gauge out of view", `[...`+panelWindow+`.document.querySelectorAll("#view-caches .chart-gauge")].some(e => e.__mlxMetricsInView === false)`, 10*time.Second)
	b.post(almost...)
	for i := 1; i <= 16; i++ {
		id := fmt.Sprintf("gauge-kv-%d", 2*i)
		evalTop(t, ctx, panelWindow+fmt.Sprintf(`.document.getElementById(%q).scrollIntoView()`, id), nil)
		waitTop(t, ctx, id+" shows 99.9 % once scrolled to", fmt.Sprintf(`(()=>{const w=%s, c=w.echarts.getInstanceByDom(w.document.getElementById(%q));
			return !!c && c.getOption().series[0].data[0].value === 99.9})()`, panelWindow, id), 10*time.Second)
	}

	for _, tab := range []string{"caches", "serving", "models", "requests"} {
		click(t, ctx, fmt.Sprintf(`[data-tab=%q]`, tab))
		waitFrame(t, ctx, tab+" view", fmt.Sprintf(`!!document.querySelector("#view-%s")`, tab), 5*time.Second)
		var over []string
		if err := inFrame(ctx, `[...document.querySelectorAll("#panel, #panel table")].filter(e => e.scrollWidth > (e.tagName === "TABLE" ? e.parentElement : e).clientWidth + 1).map(e => (e.className || e.id) + " " + e.scrollWidth + ">" + e.clientWidth)`, &over); err != nil {
			t.Fatal(err)
		}
		if len(over) > 0 {
			t.Errorf("%s: wider than their box: %v", tab, over)
		}
	}
}
