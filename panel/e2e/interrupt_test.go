package e2e

import (
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
	// The last data stays on screen while the stream is down.
	waitFrame(t, ctx, "last data kept", tileValue("queued")+` === "5"`, time.Second)
	shot(t, ctx, "interrupted")
	t.Logf("while down: %q", frameText(t, ctx, "#conn"))

	b.start()
	seed(b, "mlx-community/Qwen3-4B-4bit", 8)
	took := waitFrame(t, ctx, "live again", `document.querySelector("#conn").dataset.state === "live"`, 15*time.Second)
	t.Logf("recovered %s after the backend came back", took.Round(time.Millisecond))
	waitFrame(t, ctx, "new data after recovery", tileValue("queued")+` === "8"`, 5*time.Second)
	shot(t, ctx, "recovered")
}
