package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestBenchmarks drives a bench-serve run of the reference engine from the
// Benchmarks view: Run, progress while the run holds the GPU (Run disabled,
// with the reason), Cancel, then the run in history with its detail and
// report link, and the trend chart.
func TestBenchmarks(t *testing.T) {
	needBrowser(t)
	b := startBackend(t)
	ctx := browser(t)
	hookVisibility(t, ctx)
	navigate(t, ctx, b.URL()+"/")
	waitFrame(t, ctx, "stream live", `document.querySelector("#conn").dataset.state === "live"`, 30*time.Second)
	click(t, ctx, `[data-tab="bench"]`)
	waitFrame(t, ctx, "profiles listed", `!!document.querySelector('[data-profile="standard"] [data-action="run"]')`, 10*time.Second)
	waitFrame(t, ctx, "jobs followed over the stream, not polled", `document.querySelector("#view-bench").dataset.jobs === "stream"`, 5*time.Second)
	// Hidden, the view follows nothing (its stream closed, no polling);
	// shown again, it follows the stream again.
	for _, step := range []struct{ event, jobs string }{{"e2e-hide", "paused"}, {"e2e-show", "stream"}} {
		if err := inFrame(ctx, fmt.Sprintf(`document.dispatchEvent(new Event(%q)); true`, step.event), nil); err != nil {
			t.Fatal(err)
		}
		waitFrame(t, ctx, "jobs "+step.jobs, fmt.Sprintf(`document.querySelector("#view-bench").dataset.jobs === %q`, step.jobs), 10*time.Second)
	}
	waitFrame(t, ctx, "Run enabled while the GPU is free", `!document.querySelector('[data-profile="standard"] [data-action="run"]').disabled`, 5*time.Second)
	shot(t, ctx, "bench-idle")

	click(t, ctx, `[data-profile="standard"] [data-action="run"]`)
	waitFrame(t, ctx, "job running", `!!document.querySelector('.job:not(.job-ended)[data-status="running"]')`, 10*time.Second)
	waitFrame(t, ctx, "Run disabled with the reason while the GPU is held",
		`(()=>{const r=document.querySelector('[data-profile="smoke"] [data-action="run"]'); const why=document.querySelector('[data-profile="smoke"] .reason');
		  return r.disabled && !!why && why.textContent.startsWith("the GPU is held by job")})()`, 5*time.Second)
	// Progress moves inside the first cell, with its phase and newest figure.
	waitFrame(t, ctx, "progress moves within the first cell", `Number(document.querySelector('.job .progress').getAttribute("aria-valuenow")) > 0 &&
		/cell 1\/\d+ · [a-z-]+ \(phase \d\/\d\)/.test(document.querySelector('.job .job-stage').textContent)`, 60*time.Second)
	waitFrame(t, ctx, "elapsed time shown", `/elapsed \d/.test(document.querySelector('.job [data-timing="job"]').textContent)`, 5*time.Second)
	waitFrame(t, ctx, "an estimate of the time left", `/^elapsed [\d.]+ (ms|s|min)( \d+ s)? · about [\d.]+ (ms|s|min)( \d+ s)? left$/.test(document.querySelector('.job [data-timing="job"]').textContent)`, 60*time.Second)
	waitFrame(t, ctx, "log tail shown", `!!document.querySelector('.job .log') && document.querySelector('.job .log').textContent.length > 0`, 30*time.Second)
	var jobID string
	inFrame(ctx, `document.querySelector('.job:not(.job-ended)').dataset.job`, &jobID)
	shot(t, ctx, "bench-running")

	click(t, ctx, `.job [data-action="cancel"]`)
	waitFrame(t, ctx, "run ends after Cancel", `!document.querySelector('.job:not(.job-ended)') && !!document.querySelector('.job-ended[data-status="cancelled"]')`, 30*time.Second)
	shot(t, ctx, "bench-cancelled")
	var job struct {
		Status    string `json:"status"`
		Cancelled bool   `json:"cancelled"`
	}
	b.getJSON("/api/metrics/bench/"+jobID, &job)
	// failed and cancelled, as the original module's API says it.
	if job.Status != "failed" || !job.Cancelled {
		t.Errorf("job %s %+v after Cancel, want failed and cancelled", jobID, job)
	}
	waitFrame(t, ctx, "Run enabled again", `!document.querySelector('[data-profile="smoke"] [data-action="run"]').disabled`, 10*time.Second)

	// A complete run of the quick profile lands in history with its cells.
	click(t, ctx, `[data-profile="smoke"] [data-action="run"]`)
	waitFrame(t, ctx, "smoke run in history", fmt.Sprintf(`[...document.querySelectorAll('table.history tr[data-run]')].some(r => r.dataset.run !== %q)`, jobID), 120*time.Second)
	// The newest row arrived above an older one: its Details must open it,
	// not the run the row showed before (go-app reuses rows).
	var newest string
	inFrame(ctx, `document.querySelector('table.history tr[data-run]').dataset.run`, &newest)
	click(t, ctx, `table.history tr[data-run] [data-action="open"]`)
	waitFrame(t, ctx, "run detail", `!!document.querySelector('.detail table.cells tbody tr')`, 10*time.Second)
	if got := frameText(t, ctx, ".detail"); !strings.Contains(got, "smoke") {
		t.Errorf("detail shows %q, want the smoke run", got[:min(len(got), 120)])
	}
	checkAligned(t, ctx, "benchmarks")
	var shown string
	inFrame(ctx, `document.querySelector('.detail').dataset.detail`, &shown)
	if shown != newest || shown == jobID {
		t.Errorf("Details of row %s opened run %s", newest, shown)
	}
	var href string
	inFrame(ctx, `document.querySelector('.detail a').href`, &href)
	if !strings.HasSuffix(href, "/report") {
		t.Errorf("report link %q", href)
	}
	waitFrame(t, ctx, "trend chart drawn", paintedPixels("chart-trend")+" > 200", 10*time.Second)
	shot(t, ctx, "bench-history")

	// The cancelled run stays out of its profile's trend, saying so, and
	// joins it only when asked for.
	inFrame(ctx, `(()=>{const s=document.querySelector('[data-control="trend-profile"]'); s.value="standard";
		s.dispatchEvent(new Event("change",{bubbles:true}))})()`, nil)
	waitFrame(t, ctx, "cancelled run left out of the trend", fmt.Sprintf(`(()=>{const n=document.querySelector('.trend-note');
		return !!n && !(n.dataset.runs||"").split(" ").includes(%q) && n.textContent.includes("1 run that did not complete left out")})()`, jobID), 5*time.Second)
	click(t, ctx, `[data-control="trend-incomplete"]`)
	waitFrame(t, ctx, "cancelled run in the trend when asked for", fmt.Sprintf(`(document.querySelector('.trend-note').dataset.runs||"").split(" ").includes(%q)`, jobID), 5*time.Second)
	inFrame(ctx, `document.querySelector('.trend-note').scrollIntoView({block: "end"})`, nil)
	shot(t, ctx, "bench-trend-incomplete")
}

// TestBenchRoutesFailing: when the bench routes fail, the Benchmarks view
// says so and the live views keep working.
func TestBenchRoutesFailing(t *testing.T) {
	needBrowser(t)
	b := startBackend(t)
	host := startFailingAPIProxy(t, b)
	seed(b, "m", 4)
	ctx := browser(t)
	navigate(t, ctx, host+"/")
	waitFrame(t, ctx, "stream live", `document.querySelector("#conn").dataset.state === "live"`, 30*time.Second)
	click(t, ctx, `[data-tab="bench"]`)
	waitFrame(t, ctx, "errors shown", `!!document.querySelector('[data-error="profiles"]') && !!document.querySelector('[data-error="jobs"]')`, 10*time.Second)
	shot(t, ctx, "bench-failing")
	click(t, ctx, `[data-tab="serving"]`)
	sample(b, "m", 2, 23, 50)
	waitFrame(t, ctx, "live view still follows events", tileValue("queued")+` === "23"`, 10*time.Second)
}
