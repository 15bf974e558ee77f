package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestInterruptedStream stops the backend under a live panel: the panel
// says interrupted (and retrying), keeps the last data, and goes live again
// when the backend is back on the same address.
func TestInterruptedStream(t *testing.T) {
	needBrowser(t)
	b := startBackend(t)
	seed(b, "mlx-community/Qwen3-4B-4bit", 5)
	ctx := browser(t)
	navigate(t, ctx, b.URL()+"/")
	waitFrame(t, ctx, "stream live", `document.querySelector("#conn").dataset.state === "live"`, 30*time.Second)
	waitFrame(t, ctx, "queued tile", tileValue("queued")+` === "5"`, 5*time.Second)

	b.stop()
	waitFrame(t, ctx, "interruption shown", `["interrupted","retrying"].includes(document.querySelector("#conn").dataset.state)`, 5*time.Second)
	if got := frameText(t, ctx, "#conn"); got == "" {
		t.Error("no connection text")
	}
	// The last data stays on screen while the stream is down, greyed and
	// marked as of the last snapshot; the state names the loss's time and
	// the URL, and keeps that time through the retries.
	waitFrame(t, ctx, "last data kept", tileValue("queued")+` === "5"`, 5*time.Second)
	waitFrame(t, ctx, "figures marked stale", `document.querySelector("main.body").classList.contains("stale") &&
		/as of \d\d:\d\d:\d\d/.test(document.querySelector("[data-stale]").textContent)`, 5*time.Second)
	// Dimmed, each chart and tile in its own colours, not all one grey.
	waitFrame(t, ctx, "stale figures dimmed in their colours", `(() => {
		const c = getComputedStyle(document.querySelector("main.body .card"));
		return c.filter === "none" && Number(c.opacity) < 1;
	})()`, 5*time.Second)
	lost := frameText(t, ctx, "#conn .conn-detail")
	if !strings.Contains(lost, "stream lost at") || !strings.Contains(lost, "cannot reach "+b.URL()) {
		t.Errorf("state while down: %q", lost)
	}
	waitFrame(t, ctx, "a retry failed too", `/attempt [2-9]/.test(document.querySelector("#conn .conn-detail").textContent)`, 10*time.Second)
	if again := frameText(t, ctx, "#conn .conn-detail"); lostAt(again) != lostAt(lost) {
		t.Errorf("the loss time moved with the retry: %q then %q", lost, again)
	}
	shot(t, ctx, "interrupted")
	t.Logf("while down: %q", frameText(t, ctx, "#conn"))

	// The Benchmarks tab says in words that it cannot reach the backend.
	click(t, ctx, `[data-tab="bench"]`)
	says := "cannot reach the backend at " + b.URL() + "/api/metrics"
	waitFrame(t, ctx, "bench tab says the backend is unreachable", fmt.Sprintf(`(document.querySelector('[data-error="jobs"]')||{}).textContent === %q`, "Jobs unavailable: "+says), 15*time.Second)
	if got := frameText(t, ctx, "#view-bench"); strings.Contains(got, "fetch") || strings.Contains(got, "TypeError") {
		t.Errorf("the Benchmarks tab shows a raw error: %q", got)
	}
	shot(t, ctx, "bench-unreachable")
	click(t, ctx, `[data-tab="serving"]`)

	b.start()
	seed(b, "mlx-community/Qwen3-4B-4bit", 8)
	took := waitFrame(t, ctx, "live again", `document.querySelector("#conn").dataset.state === "live"`, 15*time.Second)
	t.Logf("recovered %s after the backend came back", took.Round(time.Millisecond))
	waitFrame(t, ctx, "new data after recovery", tileValue("queued")+` === "8"`, 5*time.Second)
	waitFrame(t, ctx, "no longer stale", `!document.querySelector("main.body").classList.contains("stale") && !document.querySelector("[data-stale]")`, 5*time.Second)
	shot(t, ctx, "recovered")
}

// lostAt is the HH:MM:SS after "stream lost at ".
func lostAt(s string) string {
	_, after, _ := strings.Cut(s, "stream lost at ")
	return strings.SplitN(after, ":", 4)[0] + strings.Join(strings.SplitN(after, ":", 4)[1:3], ":")
}

// TestBenchKeptWhenBackendGoes: the Benchmarks tab, open when the backend
// goes, keeps its profiles and history on screen, greyed, saying why and
// as of when, as the live tabs keep their figures.
func TestBenchKeptWhenBackendGoes(t *testing.T) {
	needBrowser(t)
	b := startBackend(t)
	ctx := browser(t)
	navigate(t, ctx, b.URL()+"/")
	waitFrame(t, ctx, "stream live", `document.querySelector("#conn").dataset.state === "live"`, 30*time.Second)
	click(t, ctx, `[data-tab="bench"]`)
	waitFrame(t, ctx, "profiles listed", `!!document.querySelector('[data-profile="smoke"]')`, 15*time.Second)
	b.stop()
	waitFrame(t, ctx, "the tab kept and greyed", `document.querySelector("#view-bench").classList.contains("stale") &&
		!!document.querySelector('[data-profile="smoke"]') &&
		/unavailable: .*shown as of \d\d:\d\d:\d\d/.test(document.querySelector('[data-error]').textContent)`, 20*time.Second)
	shot(t, ctx, "bench-kept")
}
