package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// TestBenchLoadCurves: runs with load sweeps, imported as `mlx-metrics
// bench import` sends a run.json (POST /history), open with their curves
// drawn, a row per point and a CSV link; the x axis switches to output
// tokens/s and another run's curves are drawn over them, without an
// error in the console. With E2E_SCREENSHOTS set it also retakes the
// curves' screenshots of docs/panel.md (the comparison, light and dark at
// 1440 px, light at 390 px).
func TestBenchLoadCurves(t *testing.T) {
	needBrowser(t)
	b := startBackend(t)
	now := time.Now()
	searched, swept := searchedRun(now.Add(-time.Hour)), sweptRun(now.Add(-2*time.Hour))
	b.importRun(swept)
	b.importRun(searched)

	ctx := browser(t)
	consoleErrors := watchErrors(t, ctx)
	openCurves(t, ctx, b, searched.ID, swept.ID)
	if n := frameCount(t, ctx, `.load-run[data-run=`+fmt.Sprintf("%q", searched.ID)+`] table.load-points tbody tr`); n != len(searched.Cells[0].LoadPoints) {
		t.Errorf("%d rows in the points table, want one per point (%d)", n, len(searched.Cells[0].LoadPoints))
	}
	var href string
	if err := inFrame(ctx, `document.querySelector('.load [data-csv="points"]').href`, &href); err != nil || !strings.HasPrefix(href, "data:text/csv") {
		t.Errorf("CSV link %.60q (%v)", href, err)
	}
	checkAligned(t, ctx, "load points")

	click(t, ctx, `.load [data-axis="tokens"]`)
	waitFrame(t, ctx, "x axis by output tokens", `document.querySelector('.load [data-axis="tokens"]').getAttribute("aria-pressed") === "true" &&
		document.querySelector("#chart-load-ttft-0").getAttribute("aria-label").endsWith("output tokens/s")`, 5*time.Second)
	waitFrame(t, ctx, "curves redrawn by tokens", paintedPixels("chart-load-ttft-0")+" > 200", 10*time.Second)
	click(t, ctx, `.load [data-axis="requests"]`)
	shot(t, ctx, "compared")
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}

	dir := os.Getenv("E2E_SCREENSHOTS")
	if dir == "" {
		return
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	for _, v := range []struct {
		name  string
		dark  bool
		width int64
	}{{"light", false, 1440}, {"dark", true, 1440}, {"390", false, 390}} {
		openPanel(t, ctx, b, v.dark, v.width)
		openCurves(t, ctx, b, searched.ID, swept.ID)
		fitTo(t, ctx, ".load", v.width)
		if err := os.WriteFile(filepath.Join(dir, "bench-curves-"+v.name+".png"), screenshot(t, ctx), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// openCurves opens the Benchmarks tab, run id's detail, and compares it
// with run other, waiting until both charts are drawn.
func openCurves(t *testing.T, ctx context.Context, b *backend, id, other string) {
	t.Helper()
	navigate(t, ctx, b.URL()+"/")
	waitFrame(t, ctx, "stream live", `document.querySelector("#conn").dataset.state === "live"`, 30*time.Second)
	click(t, ctx, `[data-tab="bench"]`)
	waitFrame(t, ctx, "runs listed", `document.querySelectorAll('table.history tr[data-run]').length === 2`, 10*time.Second)
	click(t, ctx, fmt.Sprintf(`table.history tr[data-run=%q] [data-action="open"]`, id))
	waitFrame(t, ctx, "curves drawn", paintedPixels("chart-load-ttft-0")+" > 200 && "+paintedPixels("chart-load-tpot-0")+" > 200", 10*time.Second)
	if err := inFrame(ctx, fmt.Sprintf(`(()=>{const s=document.querySelector('[data-control="compare"]'); s.value=%q;
		s.dispatchEvent(new Event("change",{bubbles:true}))})()`, other), nil); err != nil {
		t.Fatal(err)
	}
	waitFrame(t, ctx, "the other run compared", fmt.Sprintf(`!!document.querySelector('[data-compare=%q]') && document.querySelectorAll('.load-run').length === 2`, other), 5*time.Second)
	waitFrame(t, ctx, "curves redrawn", paintedPixels("chart-load-ttft-0")+" > 200", 10*time.Second)
}

// fitTo scrolls the element matching selector to the top of a window as
// tall as it, so a screenshot shows it alone (without the scroll bar of the
// rest of the page beside it).
func fitTo(t *testing.T, ctx context.Context, selector string, width int64) {
	t.Helper()
	var h int64
	if err := inFrame(ctx, fmt.Sprintf(`Math.ceil(document.querySelector(%q).getBoundingClientRect().height)`, selector), &h); err != nil {
		t.Fatal(err)
	}
	h = min(h+24, 2600)
	if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(width, h)); err != nil {
		t.Fatal(err)
	}
	waitFrame(t, ctx, "frame resized", fmt.Sprintf(`Math.abs(window.innerHeight - %d) < 2`, h), 5*time.Second)
	if err := inFrame(ctx, fmt.Sprintf(`(()=>{const e=document.querySelector(%q); e.style.scrollMarginTop="12px"; e.scrollIntoView({block:"start"});
		document.scrollingElement.style.scrollbarWidth="none";
		return new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))})()`, selector), nil); err != nil {
		t.Fatal(err)
	}
}

// frameCount is how many elements of the frame match selector.
func frameCount(t *testing.T, ctx context.Context, selector string) int {
	t.Helper()
	var n int
	if err := inFrame(ctx, fmt.Sprintf(`document.querySelectorAll(%q).length`, selector), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// watchErrors collects, from now on, the page's console errors, uncaught
// exceptions and error entries of the browser log (a resource that failed
// to load), the frame's too: it is the same target.
func watchErrors(t *testing.T, ctx context.Context) func() []string {
	var mu sync.Mutex
	var errs []string
	messages := chromedp.Console(ctx)
	go func() { // ends with the tab (the iterator yields its context's error)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				errs = append(errs, m.String())
				mu.Unlock()
			}
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), errs...)
	}
}

// importRun keeps r in the backend's history, as `mlx-metrics bench
// import` does.
func (b *backend) importRun(r bench.RunRecord) {
	b.t.Helper()
	body, err := json.Marshal(r)
	if err != nil {
		b.t.Fatal(err)
	}
	res, err := http.Post(b.URL()+"/api/metrics/history", "application/json", bytes.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		var e struct{ Error struct{ Message string } }
		json.NewDecoder(res.Body).Decode(&e)
		b.t.Fatalf("importing %s: %d %s", r.ID, res.StatusCode, e.Error.Message)
	}
}

// loadPoint is a point of a sweep of 128-token answers: the rate offered
// and carried, TTFT and TPOT p50 and p99 (ms), and the share of requests
// meeting the SLO.
func loadPoint(n, repeat int, search string, offered, carried, ttft50, ttft99, tpot50, tpot99, good float64) bench.LoadPoint {
	goodput := carried * good
	return bench.LoadPoint{
		Point: n, Repeat: repeat, Search: search, Arrival: bench.ArrivalPoisson, OfferedRate: offered,
		Requests: 200, Completed: 200, DurationS: 200 / carried, SendRate: offered,
		RequestThroughput: carried, OutputThroughput: carried * 128, TotalTokenThroughput: carried * 640,
		InputTokens: 200 * 512, OutputTokens: 200 * 128,
		TTFT:    bench.Dist{Count: 200, Mean: ttft50 * 1.1, Median: ttft50, P90: ttft50 + (ttft99-ttft50)*0.6, P95: ttft50 + (ttft99-ttft50)*0.8, P99: ttft99},
		TPOT:    bench.Dist{Count: 200, Mean: tpot50 * 1.05, Median: tpot50, P90: tpot50 + (tpot99-tpot50)*0.6, P95: tpot50 + (tpot99-tpot50)*0.8, P99: tpot99},
		ITL:     bench.Dist{Count: 200 * 127, Mean: tpot50, Median: tpot50 * 0.95, P90: tpot99 * 0.8, P95: tpot99 * 0.9, P99: tpot99 * 1.2},
		E2EL:    bench.Dist{Count: 200, Mean: ttft50 + 127*tpot50*1.05, Median: ttft50 + 127*tpot50, P90: ttft99 + 127*tpot99*0.8, P95: ttft99 + 127*tpot99*0.9, P99: ttft99 + 127*tpot99},
		Goodput: &goodput, GoodRequests: int(200 * good), Saturated: carried < offered*0.9,
	}
}

// loadRecord is a complete run of one cell with a load phase under an SLO
// of 500 ms TTFT and 30 ms TPOT.
func loadRecord(id string, start time.Time, load *bench.Load, points []bench.LoadPoint, maxRate *bench.MaxRate) bench.RunRecord {
	load.Goodput = &bench.SLO{TTFTMs: 500, TPOTMs: 30}
	return bench.RunRecord{
		ID: id, Profile: "load", Plan: bench.Plan{Scope: "all", Phases: bench.Phases{Load: load, LoadOnly: true}},
		Machine:   bench.Machine{Chip: "Apple M2 Ultra", MemoryBytes: 192 << 30, Host: "studio-1", OS: "macOS 15.1"},
		StartedAt: start.UnixMilli(), FinishedAt: start.Add(14 * time.Minute).UnixMilli(), Complete: true,
		Cells: []bench.CellResult{{
			Key: "mlx-community/Qwen3-4B-4bit/tree/default", Model: "mlx-community/Qwen3-4B-4bit", Kind: bench.KindTree,
			Configuration: "default", Status: bench.CellMeasured, LoadPoints: points, MaxRate: maxRate,
		}},
	}
}

// searchedRun is a find-max-rate search, measured in its order (a ladder
// from 1 req/s, then bisection): it carries 8 req/s and fails at 12.
func searchedRun(start time.Time) bench.RunRecord {
	return loadRecord("20261203T100000Z-search", start, &bench.Load{FindMaxRate: &bench.FindMaxRate{StartRate: 1}}, []bench.LoadPoint{
		loadPoint(1, 1, "ladder", 1, 0.99, 45, 90, 11, 14, 1),
		loadPoint(2, 1, "ladder", 2, 1.98, 48, 96, 11.5, 15, 1),
		loadPoint(3, 1, "ladder", 4, 3.95, 56, 130, 12.8, 18, 1),
		loadPoint(4, 1, "ladder", 8, 7.8, 82, 260, 16, 25, 0.98),
		loadPoint(5, 1, "ladder", 16, 11.2, 1450, 3900, 31, 58, 0.12),
		loadPoint(6, 1, "bisect", 12, 10.4, 310, 1250, 24, 41, 0.71),
	}, &bench.MaxRate{Rate: 8, FailedAt: 12, MinShare: 0.95, Points: 6})
}

// sweptRun is an older run's fixed sweep of four rates, each measured
// twice, on a slower build: it saturates at 8 req/s.
func sweptRun(start time.Time) bench.RunRecord {
	var pts []bench.LoadPoint
	for i, p := range []struct{ rate, carried, ttft50, ttft99, tpot50, tpot99, good float64 }{
		{1, 0.99, 58, 120, 13, 17, 1}, {2, 1.97, 63, 135, 14, 19, 1}, {4, 3.9, 90, 260, 17, 26, 0.99}, {8, 6.1, 880, 2900, 29, 52, 0.31},
	} {
		for r := 1; r <= 2; r++ {
			jitter := 1 + 0.04*float64(r-1)
			pts = append(pts, loadPoint(i+1, r, "", p.rate, p.carried/jitter, p.ttft50*jitter, p.ttft99*jitter, p.tpot50*jitter, p.tpot99*jitter, p.good))
		}
	}
	return loadRecord("20261202T100000Z-sweep", start, &bench.Load{Rates: []float64{1, 2, 4, 8}, Repeats: 2}, pts, nil)
}
