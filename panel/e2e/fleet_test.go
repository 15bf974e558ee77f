package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/promtest"
)

// TestFleetView: a real Prometheus scrapes three backends, each fed by its
// own reference engine at another rate; a fourth backend with --fleet
// shows the three in its Fleet tab, and one stopped as not reporting.
// With E2E_SCREENSHOTS it saves the view as docs/img/fleet-1440.png.
func TestFleetView(t *testing.T) {
	needBrowser(t)
	var hosts []*backend
	var targets []string
	for _, rate := range []string{"2", "5", "10"} {
		b := startBackend(t, "--reference-engine", "--reference-traffic", rate)
		hosts = append(hosts, b)
		targets = append(targets, b.addr)
	}
	prom := promtest.Start(t, time.Second, promtest.Job{Name: "mlx-metrics", Targets: targets})
	prom.WaitScrapes(t, 5, 2*time.Minute)
	viewer := startBackend(t, "--fleet", prom.URL)

	ctx := browser(t)
	openPanel(t, ctx, viewer, false, 1440)
	waitFrame(t, ctx, "a Fleet tab", `!!document.querySelector('[data-tab="fleet"]')`, 30*time.Second)
	click(t, ctx, `[data-tab="fleet"]`)
	for _, h := range hosts {
		waitFrame(t, ctx, "host "+h.addr+" reporting", `!!document.querySelector('.host[data-host="`+h.addr+`"]:not([data-reporting="false"])')`, 30*time.Second)
	}
	waitFrame(t, ctx, "a row of figures per host", `document.querySelectorAll('.fleet-table tbody tr[data-host]').length >= 3`, 30*time.Second)
	shot(t, ctx, "fleet")

	// One host stops: listed as not reporting, never dropped, once
	// Prometheus has failed to scrape it and the view refreshed (every
	// 15 s, or at once for another range).
	hosts[0].stop()
	click(t, ctx, `.range[data-range="1h"]`)
	waitFrame(t, ctx, "the stopped host not reporting", `!!document.querySelector('.host[data-host="`+hosts[0].addr+`"][data-reporting="false"]')`, 40*time.Second)
	if dir := os.Getenv("E2E_SCREENSHOTS"); dir != "" {
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(root, dir)
		}
		fit(t, ctx, 1440)
		if err := os.WriteFile(filepath.Join(dir, "fleet-1440.png"), screenshot(t, ctx), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if text := frameText(t, ctx, ".fleet-status"); strings.Contains(text, "Cannot read") {
		t.Errorf("the fleet status says a fault: %s", text)
	}
}
