package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestUnreachedSource follows an event source that cannot be reached (a
// closed loopback port, credentials in its URL): the indicator says so
// with the host, not "live", and /healthz is degraded.
func TestUnreachedSource(t *testing.T) {
	needBrowser(t)
	closed := closedPort(t)
	b := startBackend(t, "--events-url", "http://user:secret@"+closed+"/events")
	ctx := browser(t)
	navigate(t, ctx, b.URL()+"/")
	waitFrame(t, ctx, "source not reached", `document.querySelector("#conn").dataset.state === "unreached"`, 30*time.Second)
	text := frameText(t, ctx, "#conn")
	for _, want := range []string{"source not reached", "backend live; cannot reach the event source " + closed, "connection refused"} {
		if !strings.Contains(text, want) {
			t.Errorf("indicator %q lacks %q", text, want)
		}
	}
	if strings.Contains(text, "secret") || strings.Contains(text, "/events") {
		t.Errorf("indicator %q shows more of the URL than its host", text)
	}
	var health struct {
		Status   string   `json:"status"`
		Degraded []string `json:"degraded"`
	}
	b.getJSON("/healthz", &health)
	if health.Status != "degraded" || len(health.Degraded) != 1 || health.Degraded[0] != "ingest" {
		t.Errorf("/healthz %+v, want degraded by ingest", health)
	}
	shot(t, ctx, "unreached-source")
}
