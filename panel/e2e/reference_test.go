package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestReferenceEngineViews runs the backend with its reference engine (a
// simulator with synthetic traffic) and screenshots every live view drawn
// from that traffic.
func TestReferenceEngineViews(t *testing.T) {
	needBrowser(t)
	b := startBackend(t, "--reference-engine")
	ctx := browser(t)
	navigate(t, ctx, b.URL()+"/")
	waitFrame(t, ctx, "stream live", `document.querySelector("#conn").dataset.state === "live"`, 30*time.Second)
	waitFrame(t, ctx, "synthetic requests finished", `/^[1-9][\d,]* finished since start$/.test(`+tileHint("requests")+`)`, 30*time.Second)
	waitFrame(t, ctx, "model resident", tileValue("models")+` === "1"`, 30*time.Second)
	waitFrame(t, ctx, "throughput chart drawn", paintedPixels("chart-throughput")+" > 500", 10*time.Second)
	shot(t, ctx, "serving")
	for _, v := range []struct{ tab, chart string }{{"models", "chart-memory"}, {"caches", "gauge-kv-0"}, {"requests", ""}} {
		click(t, ctx, `[data-tab="`+v.tab+`"]`)
		waitFrame(t, ctx, v.tab+" view", `!!document.querySelector("#view-`+v.tab+`")`, 5*time.Second)
		if v.chart != "" {
			waitFrame(t, ctx, v.chart+" drawn", paintedPixels(v.chart)+" > 200", 10*time.Second)
		}
		shot(t, ctx, v.tab)
	}
	waitFrame(t, ctx, "request timings measured", `!!document.querySelector('[data-timing="ttft"]') && !document.querySelector('[data-timing="ttft"] .muted')`, 10*time.Second)
	// Keep the snapshot the screenshots show, for comparison.
	var snap json.RawMessage
	b.getJSON("/api/metrics/snapshot", &snap)
	os.WriteFile(filepath.Join(outDir, t.Name()+"-snapshot.json"), snap, 0o644)
}
