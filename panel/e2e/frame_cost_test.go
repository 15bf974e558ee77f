package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// panelWindow is the panel's frame window from the top page (the
// standalone page's element has an open shadow root and the frame is of
// the same origin), for what the test's isolated world cannot see: the
// page's own properties on its elements and globals.
const panelWindow = `document.querySelector("mlx-metrics-panel").shadowRoot.querySelector("iframe").contentWindow`

// waitTop polls expr in the top page until it is true.
func waitTop(t *testing.T, ctx context.Context, what, expr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var ok bool
		evalTop(t, ctx, `(()=>{try{return !!(`+expr+`)}catch(e){return false}})()`, &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			shot(t, ctx, "timeout-"+strings.ReplaceAll(what, " ", "-"))
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(50 * time.Millisecond) // polling the browser, which has no callback into the test
	}
}

// TestChartsOutOfView: a chart below the fold is drawn when its view
// opens, is not redrawn with the frames that follow while out of view,
// and is brought up to date once scrolled to; one in view follows every
// frame (docs/performance.md#the-panels-cost-per-frame).
func TestChartsOutOfView(t *testing.T) {
	needBrowser(t)
	b := startBackend(t)
	// Two models, so that the per-model table is there from the start: a
	// second resident model adds it above the charts, and they mount
	// afresh (and draw) then.
	seed(b, "org/first", 0)
	seed(b, "org/other", 0)
	ctx := browser(t)
	if _, err := chromedp.Run(ctx, chromedp.EmulateViewport(1440, 900)); err != nil {
		t.Fatal(err)
	}
	navigate(t, ctx, b.URL()+"/")
	waitFrame(t, ctx, "stream live", `document.querySelector("#conn").dataset.state === "live"`, 30*time.Second)
	for _, id := range []string{"chart-throughput", "chart-cache"} {
		waitFrame(t, ctx, id+" drawn", paintedPixels(id)+" > 300", 10*time.Second)
	}
	waitTop(t, ctx, "the first chart in view, the cache chart out of it", `(()=>{const d=`+panelWindow+`.document;
		return d.getElementById("chart-throughput").__mlxMetricsInView === true && d.getElementById("chart-cache").__mlxMetricsInView === false})()`, 10*time.Second)
	for _, id := range []string{"chart-throughput", "chart-cache"} {
		if got := chartMarks(t, ctx, id); !contains(got, "load org/first") {
			t.Fatalf("%s marks %q, want the first model's load", id, got)
		}
	}

	b.post(event("model.load", `{"model":"org/second","phase":"finished","ms":500,"weightsBytes":1000}`))
	for deadline := time.Now().Add(10 * time.Second); !contains(chartMarks(t, ctx, "chart-throughput"), "load org/second"); {
		if time.Now().After(deadline) {
			t.Fatalf("the chart in view not redrawn with the second model's load within 10 s: %q", chartMarks(t, ctx, "chart-throughput"))
		}
		time.Sleep(50 * time.Millisecond) // polling the browser
	}
	if got := chartMarks(t, ctx, "chart-cache"); contains(got, "load org/second") {
		t.Errorf("the chart out of view was redrawn: %q", got)
	}
	evalTop(t, ctx, panelWindow+`.document.getElementById("chart-cache").scrollIntoView()`, nil)
	for deadline := time.Now().Add(10 * time.Second); !contains(chartMarks(t, ctx, "chart-cache"), "load org/second"); {
		if time.Now().After(deadline) {
			t.Fatalf("the chart scrolled to not brought up to date within 10 s: %q", chartMarks(t, ctx, "chart-cache"))
		}
		time.Sleep(50 * time.Millisecond) // polling the browser
	}
}
