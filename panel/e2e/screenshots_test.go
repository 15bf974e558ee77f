package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/mlx-bun/mlx-metrics/panel/charts"
)

// TestScreenshots retakes the documentation's screenshots from `serve
// --reference-engine`: every view in light and in dark at 1440 px and in
// light at 390 px, the Benchmarks view with two finished runs, a cancelled
// one, a run's detail and the trend, a running job's progress and the
// Serving view while it holds the GPU, the head to head of a whole
// standard run (in the same three), and the Serving view once the stream
// is lost. The serving charts are shot once the traffic fills their
// window. It runs only when E2E_SCREENSHOTS names the folder to write to
// (relative to the repository root):
//
//	E2E_SCREENSHOTS=docs/img go test -count=1 -timeout 15m -run TestScreenshots ./panel/e2e/
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("E2E_SCREENSHOTS")
	if dir == "" {
		t.Skip("E2E_SCREENSHOTS is not set: the documentation's screenshots are retaken only when asked")
	}
	needBrowser(t)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	b := startBackend(t, "--reference-engine")
	ctx := browser(t)
	save := func(name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name+".png"), screenshot(t, ctx), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// History first: a complete smoke run, a standard run cancelled while
	// it runs (its progress and the Serving view shot on the way), then
	// smoke again for a trend.
	openPanel(t, ctx, b, false, 1440)
	benchRun(t, b, "smoke", "done")
	waitWindow(t, b)
	id := startRun(t, b, "standard")
	click(t, ctx, `[data-tab="bench"]`)
	waitFrame(t, ctx, "a running job's estimate of the time left", `/ left$/.test((document.querySelector('.job [data-timing="job"]')||{}).textContent||"")`, 3*time.Minute)
	waitFrame(t, ctx, "log tail shown", `!!document.querySelector('.job .log')`, 30*time.Second)
	fit(t, ctx, 1440)
	save("bench-running-1440")
	showView(t, ctx, "serving")
	waitFrame(t, ctx, "the GPU held by the run", `!!document.querySelector('[data-lease="held"]')`, 10*time.Second)
	fit(t, ctx, 1440)
	save("serving-bench-1440")
	req, _ := http.NewRequest(http.MethodDelete, b.URL()+"/api/metrics/bench/"+id, nil)
	if res, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		res.Body.Close()
	}
	waitJob(t, b, id, "cancelled")
	benchRun(t, b, "smoke", "done")

	variants := []struct {
		suffix string
		dark   bool
		width  int64
	}{{"-1440", false, 1440}, {"-dark-1440", true, 1440}, {"-390", false, 390}}
	for _, v := range variants {
		openPanel(t, ctx, b, v.dark, v.width)
		for _, tab := range []string{"serving", "models", "caches", "requests", "bench"} {
			showView(t, ctx, tab)
			fit(t, ctx, v.width)
			save(tab + v.suffix)
		}
	}

	// A head to head: standard run to its end (its tree cell, with the
	// prefix cache, against its reference without), the block shot alone.
	id = startRun(t, b, "standard")
	waitJob(t, b, id, "done")
	for _, v := range variants {
		openPanel(t, ctx, b, v.dark, v.width)
		click(t, ctx, `[data-tab="bench"]`)
		waitFrame(t, ctx, "the standard run listed", fmt.Sprintf(`!!document.querySelector('table.history tr[data-run=%q]')`, id), 10*time.Second)
		click(t, ctx, fmt.Sprintf(`table.history tr[data-run=%q] [data-action="open"]`, id))
		waitFrame(t, ctx, "its head to head", `!!document.querySelector('.head-to-head .pair-figures tr[data-figure]')`, 10*time.Second)
		fitTo(t, ctx, ".head-to-head", v.width)
		save("bench-head-to-head" + v.suffix)
	}

	// The Serving view once the backend is gone: greyed, as of the last frame.
	openPanel(t, ctx, b, false, 1440)
	showView(t, ctx, "serving")
	b.stop()
	waitFrame(t, ctx, "figures marked stale", `!!document.querySelector("[data-stale]") && /attempt [2-9]/.test(document.querySelector("#conn").textContent)`, 30*time.Second)
	fit(t, ctx, 1440)
	save("serving-stale-1440")
}

// openPanel loads the standalone page at width in the light or dark
// scheme and waits for the stream.
func openPanel(t *testing.T, ctx context.Context, b *backend, dark bool, width int64) {
	t.Helper()
	scheme := "light"
	if dark {
		scheme = "dark"
	}
	media := emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, media); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(width, 1000)); err != nil {
		t.Fatal(err)
	}
	navigate(t, ctx, b.URL()+"/")
	waitFrame(t, ctx, "stream live", `document.querySelector("#conn").dataset.state === "live"`, 30*time.Second)
	waitFrame(t, ctx, scheme+" theme", fmt.Sprintf(`document.documentElement.dataset.theme === %q`, scheme), 5*time.Second)
}

// showView opens tab and waits until its charts are drawn.
func showView(t *testing.T, ctx context.Context, tab string) {
	t.Helper()
	click(t, ctx, fmt.Sprintf(`[data-tab=%q]`, tab))
	waitFrame(t, ctx, tab+" view", fmt.Sprintf(`!!document.querySelector("#view-%s")`, tab), 5*time.Second)
	var charts []string
	switch tab {
	case "serving":
		charts = []string{"chart-throughput", "chart-ttft", "chart-tpot", "chart-e2e", "chart-token-rates", "chart-queue",
			"chart-phases", "chart-finish", "chart-cache", "chart-lengths"}
	case "models":
		charts = []string{"chart-memory"}
	case "caches":
		charts = []string{"gauge-kv-0", "gauge-prefix-1"}
	case "requests":
		waitFrame(t, ctx, "request timings measured", `!!document.querySelector('[data-timing="ttft"]') && !document.querySelector('[data-timing="ttft"] .muted')`, 10*time.Second)
	case "bench":
		waitFrame(t, ctx, "history listed", `document.querySelectorAll('table.history tr[data-run]').length >= 3`, 10*time.Second)
		click(t, ctx, `table.history tr[data-run] [data-action="open"]`)
		waitFrame(t, ctx, "run detail", `!!document.querySelector('.detail table.cells tbody tr')`, 10*time.Second)
		charts = []string{"chart-trend"}
	}
	for _, c := range charts {
		waitFrame(t, ctx, c+" drawn", paintedPixels(c)+" > 200", 10*time.Second)
	}
}

// fit makes the window as tall as the view (up to 2600 px), so a shot shows
// it whole without an empty half-page below.
func fit(t *testing.T, ctx context.Context, width int64) {
	t.Helper()
	var h int64
	if err := inFrame(ctx, `Math.ceil(document.querySelector("#panel").getBoundingClientRect().height)`, &h); err != nil {
		t.Fatal(err)
	}
	h = min(max(h+2, 200), 2600)
	if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(width, h)); err != nil {
		t.Fatal(err)
	}
	// The frame takes the new height and paints it before the shot.
	waitFrame(t, ctx, "frame resized", fmt.Sprintf(`Math.abs(window.innerHeight - %d) < 2`, h), 5*time.Second)
	if err := inFrame(ctx, `new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, nil); err != nil {
		t.Fatal(err)
	}
}

// screenshot captures the window and reduces it to 256 colours.
func screenshot(t *testing.T, ctx context.Context) []byte {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&out, quantize(img)); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// waitWindow waits until the reference engine's traffic spans the serving
// charts' window, in the scheduler series and in the timeline, so that no
// chart is shot mostly empty.
func waitWindow(t *testing.T, b *backend) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	type point struct {
		At int64 `json:"at"`
	}
	span := func(pts []point) int64 {
		if len(pts) == 0 {
			return 0
		}
		return pts[len(pts)-1].At - pts[0].At
	}
	for {
		var s struct{ Series, Timeline []point }
		b.getJSON("/api/metrics/snapshot", &s)
		if span(s.Series) >= charts.MinWindowMs && span(s.Timeline) >= charts.MinWindowMs {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("traffic spans %d ms of series and %d ms of timeline after 3 minutes, want %d", span(s.Series), span(s.Timeline), charts.MinWindowMs)
		}
		time.Sleep(time.Second) // polling the backend; nothing is asserted on timing
	}
}

// startRun starts a bench-serve run of profile and returns its job ID.
func startRun(t *testing.T, b *backend, profile string) string {
	t.Helper()
	res, err := http.Post(b.URL()+"/api/metrics/bench", "application/json", strings.NewReader(fmt.Sprintf(`{"profile":%q}`, profile)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var j struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(res.Body).Decode(&j); err != nil || j.ID == "" {
		t.Fatalf("starting %s: %d %v", profile, res.StatusCode, err)
	}
	return j.ID
}

// benchRun runs profile to its end and checks how it ended.
func benchRun(t *testing.T, b *backend, profile, status string) {
	t.Helper()
	waitJob(t, b, startRun(t, b, profile), status)
}

// waitJob waits until job id has status.
func waitJob(t *testing.T, b *backend, id, status string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		var j struct {
			Status    string `json:"status"`
			Cancelled bool   `json:"cancelled"`
		}
		b.getJSON("/api/metrics/bench/"+id, &j)
		if j.Cancelled {
			j.Status = "cancelled" // the API says failed, as the original module did
		}
		switch {
		case j.Status == status:
			return
		case j.Status != "running" && j.Status != "queued":
			t.Fatalf("job %s ended %s, want %s", id, j.Status, status)
		}
		time.Sleep(500 * time.Millisecond) // polling the backend's job; nothing is asserted on timing
	}
	t.Fatalf("job %s not %s within 5 minutes", id, status)
}

// quantize reduces img to at most 256 colours by median cut over its
// distinct colours (each box split across its widest channel), mapping
// each colour to its box's mean weighted by pixel count. A UI's flat
// colours and its text survive it, and the PNG is a fraction of the size.
func quantize(img image.Image) *image.Paletted {
	bounds := img.Bounds()
	type entry struct {
		c [3]uint8
		n int
	}
	key := func(x, y int) uint32 {
		r, g, b, _ := img.At(x, y).RGBA()
		return r>>8<<16 | g>>8<<8 | b>>8
	}
	counts := map[uint32]int{}
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			counts[key(x, y)]++
		}
	}
	all := make([]entry, 0, len(counts))
	for k, n := range counts {
		all = append(all, entry{[3]uint8{uint8(k >> 16), uint8(k >> 8), uint8(k)}, n})
	}
	sort.Slice(all, func(i, j int) bool { // deterministic order
		a, b := all[i].c, all[j].c
		return a[0] < b[0] || a[0] == b[0] && (a[1] < b[1] || a[1] == b[1] && a[2] < b[2])
	})
	widest := func(box []entry) (ch, width int) {
		for c := 0; c < 3; c++ {
			lo, hi := 255, 0
			for _, e := range box {
				lo, hi = min(lo, int(e.c[c])), max(hi, int(e.c[c]))
			}
			if hi-lo > width {
				ch, width = c, hi-lo
			}
		}
		return ch, width
	}
	boxes := [][]entry{all}
	for len(boxes) < 256 {
		best, bestWidth, bestCh := -1, 0, 0
		for i, box := range boxes {
			if ch, w := widest(box); len(box) > 1 && w > bestWidth {
				best, bestWidth, bestCh = i, w, ch
			}
		}
		if best < 0 {
			break
		}
		box := boxes[best]
		sort.SliceStable(box, func(i, j int) bool { return box[i].c[bestCh] < box[j].c[bestCh] })
		half := len(box) / 2
		boxes[best] = box[:half]
		boxes = append(boxes, box[half:])
	}
	pal := make(color.Palette, len(boxes))
	index := make(map[uint32]uint8, len(all))
	for i, box := range boxes {
		var sum [3]int
		total := 0
		for _, e := range box {
			for c := range sum {
				sum[c] += int(e.c[c]) * e.n
			}
			total += e.n
			index[uint32(e.c[0])<<16|uint32(e.c[1])<<8|uint32(e.c[2])] = uint8(i)
		}
		pal[i] = color.RGBA{uint8(sum[0] / total), uint8(sum[1] / total), uint8(sum[2] / total), 255}
	}
	out := image.NewPaletted(bounds, pal)
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			out.SetColorIndex(x, y, index[key(x, y)])
		}
	}
	return out
}
