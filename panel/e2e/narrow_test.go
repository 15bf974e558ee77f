package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// longModel is a model id as long as Hugging Face's get, with break
// opportunities only after its separators.
const longModel = "mlx-community/Qwen3-30B-A3B-Instruct-2507-4bit-DWQ"

// unbrokenModel has no separator: the one name that may break inside a
// word, where it is wider than its box.
const unbrokenModel = "AnUnusuallyLongModelNameWithoutAnySeparatorAtAllForTheTest"

// TestNarrowEveryTab: at 390 px every tab (Serving, Models, Caches,
// Requests, Fleet from a fake query API, Benchmarks with a profile and
// runs naming a long model, one run's detail with a head to head) fits
// the frame without it scrolling sideways; no two interactive elements or
// header cells overlap, nor does a control cover a table cell; nothing is
// clipped without a title saying it; and a model name breaks only at its
// separators (inside a word only where the word alone is wider than its
// box). With E2E_SCREENSHOTS set it saves the Serving, Fleet and
// Benchmarks tabs at 390 px, light and dark, as narrow-<tab>-<theme>.png.
func TestNarrowEveryTab(t *testing.T) {
	needBrowser(t)
	query := fakeFleetAPI(t, []string{"gpu-host-01.lab.example:7878", "gpu-host-02.lab.example:7878"},
		[]string{longModel, "reference-sim"})
	b := startBackend(t, "--fleet", query.URL)
	seed(b, longModel, 2)
	seed(b, "reference-sim", 1)
	seed(b, unbrokenModel, 0)
	narrowBench(t, b)

	ctx := browser(t)
	openPanel(t, ctx, b, false, 390)
	for _, tab := range []string{"serving", "models", "caches", "requests", "fleet", "bench"} {
		showNarrow(t, ctx, tab)
		checkNarrow(t, ctx, tab)
	}

	dir := os.Getenv("E2E_SCREENSHOTS")
	if dir == "" {
		return
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	for _, theme := range []string{"light", "dark"} {
		openPanel(t, ctx, b, theme == "dark", 390)
		for _, tab := range []string{"serving", "fleet", "bench"} {
			showNarrow(t, ctx, tab)
			fit(t, ctx, 390)
			if err := os.WriteFile(filepath.Join(dir, "narrow-"+tab+"-"+theme+".png"), screenshot(t, ctx), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// fakeFleetAPI is a Prometheus query API answering every query of the
// fleet view with the same figures for each host and model: the first host
// reporting, the others not.
func fakeFleetAPI(t *testing.T, hosts, models []string) *httptest.Server {
	t.Helper()
	sample := func(labels map[string]string, value string) string {
		m, _ := json.Marshal(labels)
		return fmt.Sprintf(`{"metric":%s,"value":[%d,%q]}`, m, time.Now().Unix(), value)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		r.ParseForm()
		q := r.Form.Get("query")
		var result []string
		switch {
		case strings.Contains(q, "mlx_build_info"):
			for i, h := range hosts {
				if i == 0 || strings.Contains(q, "last_over_time") {
					result = append(result, sample(map[string]string{"instance": h, "version": "0.9.0"}, "1"))
				}
			}
		default:
			value := "12.5"
			switch {
			case strings.Contains(q, "histogram_quantile"):
				value = "0.1234"
			case strings.Contains(q, "kv_cache"):
				value = "0.5"
			}
			for _, h := range hosts {
				for _, m := range models {
					result = append(result, sample(map[string]string{"instance": h, "model_name": m}, value))
				}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, strings.Join(result, ","))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// narrowBench gives b a profile naming the long model beside the shipped
// ones, a complete run of a load sweep on it (with a head to head against
// a reference cell of it) and a run that did not complete, with problems.
func narrowBench(t *testing.T, b *backend) {
	t.Helper()
	plans := filepath.Join(b.home, "metrics", "bench", "plans")
	raw, err := os.ReadFile(filepath.Join(plans, "smoke.json"))
	if err != nil {
		t.Fatal(err)
	}
	var plan map[string]any
	if err := json.Unmarshal(raw, &plan); err != nil {
		t.Fatal(err)
	}
	plan["models"] = []string{"reference-sim", longModel}
	plan["description"] = "The smoke profile, naming a long model beside the reference engine."
	raw, _ = json.Marshal(plan)
	if err := os.WriteFile(filepath.Join(plans, "long-names.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	run := searchedRun(now.Add(-time.Hour))
	run.ID = "20261203T100000Z-long"
	c := &run.Cells[0]
	c.Model, c.Key = longModel, longModel+"/tree/default"
	// A head to head on it: the tree cell against a reference cell of the
	// long model, the figures of each and probes drifting apart.
	decode := func(rates ...float64) []bench.Sample {
		var ss []bench.Sample
		for i, r := range rates {
			ss = append(ss, bench.Sample{Phase: bench.PhaseDecode, Run: i + 1, Attempt: 1, CompletionTokens: 128, DecodeTokensPerSecond: r})
		}
		return ss
	}
	probes := func(raw int64) []bench.Probe {
		return []bench.Probe{
			{Kind: bench.ProbeRaw, PromptTokens: raw, CompletionTokens: 32, Finish: "length", Text: "The quick brown fox"},
			{Kind: bench.ProbeChat, PromptTokens: 41, CompletionTokens: 32, Finish: "length", Text: "Hello there"},
		}
	}
	c.ColdStartMs, c.PeakRSSBytes, c.Samples, c.Probes = ptr(1840.0), 2300<<20, decode(61.2, 62.8, 63.1), probes(12)
	run.Cells = append(run.Cells, bench.CellResult{
		Key: longModel + "/reference/default", Model: longModel, Kind: bench.KindReference, Configuration: "default",
		Status: bench.CellMeasured, ColdStartMs: ptr(2010.0), PeakRSSBytes: 2500 << 20, Samples: decode(48.1, 48.9, 49.5), Probes: probes(14),
	})
	b.importRun(run)
	failed := sweptRun(now.Add(-2 * time.Hour))
	failed.ID, failed.Complete, failed.ExitCode = "20261202T100000Z-failed", false, 1
	failed.Problems = []string{
		"cell " + longModel + "/tree/default: the server exited with status 1 before it answered (see server.log)",
		"the run ended early: 3 of 4 load points measured",
	}
	b.importRun(failed)
}

// showNarrow opens tab and waits until what the checks look at is there.
func showNarrow(t *testing.T, ctx context.Context, tab string) {
	t.Helper()
	click(t, ctx, fmt.Sprintf(`[data-tab=%q]`, tab))
	waitFrame(t, ctx, tab+" view", fmt.Sprintf(`!!document.querySelector("#view-%s")`, tab), 5*time.Second)
	var wait []string
	switch tab {
	case "serving":
		waitFrame(t, ctx, "per-model table", `document.querySelectorAll("[data-model]").length >= 3`, 10*time.Second)
		wait = []string{"chart-throughput", "chart-ttft"}
	case "models":
		wait = []string{"chart-memory"}
	case "caches":
		wait = []string{"gauge-kv-0"}
	case "requests":
		waitFrame(t, ctx, "request timings measured", `!!document.querySelector('[data-timing="ttft"]') && !document.querySelector('[data-timing="ttft"] .muted')`, 10*time.Second)
	case "fleet":
		waitFrame(t, ctx, "a row per host and model", `document.querySelectorAll('.fleet-table tbody tr[data-host]').length >= 4`, 30*time.Second)
	case "bench":
		waitFrame(t, ctx, "profiles listed", `!!document.querySelector('[data-profile="long-names"] [data-action="run"]')`, 10*time.Second)
		waitFrame(t, ctx, "history listed", `document.querySelectorAll('table.history tr[data-run]').length >= 2`, 10*time.Second)
		click(t, ctx, `table.history tr[data-run="20261203T100000Z-long"] [data-action="open"]`)
		waitFrame(t, ctx, "run detail", `!!document.querySelector('.detail table.cells tbody tr')`, 10*time.Second)
		waitFrame(t, ctx, "its head to head", `document.querySelectorAll('.head-to-head .pair-figures tr[data-figure]').length === 3`, 10*time.Second)
		wait = []string{"chart-load-ttft-0", "chart-trend"}
	}
	for _, c := range wait {
		waitFrame(t, ctx, c+" drawn", paintedPixels(c)+" > 200", 10*time.Second)
	}
}

// narrowChecks finds, in the frame, what is wrong with a narrow layout:
// sideways scrolling of the frame; interactive elements and header cells
// overlapping one another, or a control covering a table cell (each as
// far as it shows inside the boxes that clip it); text clipped by an
// element with no title; and a model name broken inside a word that would
// fit its box whole.
const narrowChecks = `(() => {
	const out = [];
	const de = document.documentElement;
	// The document scrolls in html, or in body where html and body both
	// scroll (an embedded frame).
	for (const e of [de, document.body])
		if (e.scrollWidth > e.clientWidth) out.push("the frame scrolls sideways: " + e.tagName.toLowerCase() + " is " + e.scrollWidth + " px wide in " + e.clientWidth);
	const name = e => e.tagName.toLowerCase() + (e.className && typeof e.className === "string" ? "." + e.className.trim().split(/\s+/).join(".") : "") +
		" " + JSON.stringify((e.textContent || "").trim().slice(0, 30));
	// The part of e in view: its box cut by every ancestor that clips.
	const shown = e => {
		const r = e.getBoundingClientRect();
		if (r.width < 1 || r.height < 1 || getComputedStyle(e).visibility === "hidden") return null;
		let l = r.left, t = r.top, ri = r.right, b = r.bottom;
		for (let p = e.parentElement; p && p !== de; p = p.parentElement) {
			const s = getComputedStyle(p), q = p.getBoundingClientRect();
			if (s.overflowX !== "visible") { l = Math.max(l, q.left); ri = Math.min(ri, q.right); }
			if (s.overflowY !== "visible") { t = Math.max(t, q.top); b = Math.min(b, q.bottom); }
		}
		return ri - l >= 1 && b - t >= 1 ? {e, l, t, r: ri, b} : null;
	};
	const overlap = (a, c) => !a.e.contains(c.e) && !c.e.contains(a.e) &&
		Math.min(a.r, c.r) - Math.max(a.l, c.l) > 0.5 && Math.min(a.b, c.b) - Math.max(a.t, c.t) > 0.5;
	const controls = [...document.querySelectorAll("button, a[href], select, input, summary, th")].map(shown).filter(Boolean);
	for (let i = 0; i < controls.length; i++)
		for (let j = i + 1; j < controls.length; j++)
			if (overlap(controls[i], controls[j])) out.push(name(controls[i].e) + " overlaps " + name(controls[j].e));
	const cells = [...document.querySelectorAll("td")].map(shown).filter(Boolean);
	for (const c of controls) {
		if (c.e.tagName === "TH") continue;
		for (const d of cells) if (overlap(c, d)) out.push(name(c.e) + " covers the cell " + name(d.e));
	}
	// Clipped text: an element that hides what overflows it, with no title
	// saying it whole (a chart's own box and scrolling boxes aside).
	for (const e of document.querySelectorAll("#panel *")) {
		const s = getComputedStyle(e);
		if (!["hidden", "clip"].includes(s.overflowX) || e.closest("[id^=chart-], [id^=gauge-], .bar, .progress") || !e.textContent.trim()) continue;
		if (e.scrollWidth > e.clientWidth + 1 && !e.title) out.push("clipped without a title: " + name(e));
	}
	// Model names: each word (between spaces; the separators end a text
	// node, before a <wbr>) on one line unless wider than its box.
	for (const m of document.querySelectorAll(".model-name")) {
		if (!shown(m)) continue;
		// The room a word has: the box that scrolls or clips it (a table's
		// wrapper), or the frame, less the padding of its cell or card.
		let box = m.parentElement;
		while (box !== de && getComputedStyle(box).overflowX === "visible") box = box.parentElement;
		let pad = 0;
		for (let p = m.parentElement; p && p !== box; p = p.parentElement) {
			const cs = getComputedStyle(p);
			pad += parseFloat(cs.paddingLeft) + parseFloat(cs.paddingRight) + parseFloat(cs.borderLeftWidth) + parseFloat(cs.borderRightWidth);
		}
		const room = box.clientWidth - pad;
		for (const node of m.childNodes) {
			if (node.nodeType !== Node.TEXT_NODE) continue;
			for (const w of node.data.matchAll(/\S+/g)) {
				const r = document.createRange();
				r.setStart(node, w.index); r.setEnd(node, w.index + w[0].length);
				const rects = [...r.getClientRects()].filter(x => x.width > 0);
				const lines = new Set(rects.map(x => Math.round(x.top))).size;
				const width = rects.reduce((s, x) => s + x.width, 0);
				if (lines > 1 && width <= room + 1) out.push("model name " + JSON.stringify(m.textContent) + " broken inside " + JSON.stringify(w[0]) + " (" + width.toFixed(0) + " px in " + room.toFixed(0) + ")");
			}
		}
	}
	return [...new Set(out)];
})()`

// checkNarrow fails the test with what narrowChecks finds in tab.
func checkNarrow(t *testing.T, ctx context.Context, tab string) {
	t.Helper()
	var problems []string
	if err := inFrame(ctx, narrowChecks, &problems); err != nil {
		t.Fatal(err)
	}
	var top struct{ Scroll, Client int }
	evalTop(t, ctx, `({scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth})`, &top)
	if top.Scroll > top.Client {
		problems = append(problems, fmt.Sprintf("the page scrolls sideways: %d px wide in %d", top.Scroll, top.Client))
	}
	if len(problems) > 0 {
		shot(t, ctx, "narrow-"+tab)
		t.Errorf("%s at 390 px:\n  %s", tab, strings.Join(problems, "\n  "))
	}
}
