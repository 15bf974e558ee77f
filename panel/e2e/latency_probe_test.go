package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestRenderLatency measures, inside the frame, the time from a snapshot's
// arrival on the wire to the tile showing it: the panel's own share of the
// "tiles follow events within a second" budget.
func TestRenderLatency(t *testing.T) {
	needBrowser(t)
	b := startBackend(t)
	seed(b, "m", 1)
	ctx := browser(t)
	navigate(t, ctx, b.URL()+"/")
	waitFrame(t, ctx, "stream live", `document.querySelector("#conn").dataset.state === "live"`, 30*time.Second)
	for i, q := range []int{31, 32, 33, 34, 35} {
		// A second EventSource in the frame sees the same frames as the panel.
		probe := fmt.Sprintf(`window.__probe%d = new Promise(resolve => {
			const es = new EventSource("/api/metrics/stream"); let arrived = 0;
			es.addEventListener("snapshot", e => { window.__ready%d = true; if (!arrived && e.data.includes('"queued":%d')) arrived = performance.now(); });
			const tile = document.querySelector('[data-tile="queued"] .tile-value');
			const done = () => { es.close(); resolve(performance.now() - arrived); };
			new MutationObserver((_, o) => { if (tile.textContent === "%d") { o.disconnect(); const wait = () => arrived ? done() : setTimeout(wait, 1); wait(); } })
				.observe(document.querySelector("#panel"), {subtree: true, childList: true, characterData: true});
		}); true`, i, i, q, q)
		if err := inFrame(ctx, probe, nil); err != nil {
			t.Fatal(err)
		}
		waitFrame(t, ctx, "probe connected", fmt.Sprintf("window.__ready%d === true", i), 5*time.Second)
		sample(b, "m", 1, q, 10)
		// The probe resolves when the tile shows q; bound the wait so that a
		// tile that never does fails the test instead of hanging it.
		var ms float64
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := inFrame(pctx, fmt.Sprintf("window.__probe%d", i), &ms)
		cancel()
		if err != nil {
			t.Fatalf("queued tile showing %d: %v", q, err)
		}
		t.Logf("snapshot on the wire to tile updated: %.1f ms", ms)
		record(t, fmt.Sprintf("render latency: snapshot frame received to tile updated %.1f ms", ms))
	}
}
