package e2e

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// hostPage is a page of another origin embedding the element. Its styles
// are hostile on purpose: none of them may reach the panel, and the
// panel's own class names (.note, .tile) must not style the host.
const hostPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>host</title>
<style>
  * { font-family: serif !important; color: rgb(255, 0, 0) !important; }
  table, .tile, canvas { display: none !important; }
  mlx-metrics-panel { --mlx-metrics-accent: rgb(255, 0, 255); margin: 8px; }
</style></head>
<body>
<p class="note" id="host-note">host text with the panel's class names</p>
<div id="slot"></div>
<script type="module">
  window.loadError = "";
  try {
    await import("BACKEND/api/metrics/panel.js");
    const el = document.createElement("mlx-metrics-panel");
    el.connection = CONNECTION;
    document.getElementById("slot").append(el);
    window.panel = el;
  } catch (e) {
    window.loadError = String(e);
  }
</script>
</body></html>`

// The two forms of the connection the README documents: absolute URLs of
// the backend, and the README's snippet as written, relative, which the
// loader resolves against its own origin.
const (
	absoluteConnection = `{ apiBase: "BACKEND/api/metrics", eventsUrl: "BACKEND/api/metrics/stream" }`
	readmeConnection   = `{ apiBase: "/api/metrics", eventsUrl: "/api/metrics/stream" }`
)

func hostHTML(backend, conn string) string {
	return strings.ReplaceAll(strings.ReplaceAll(hostPage, "CONNECTION", conn), "BACKEND", backend)
}

// startHost serves hostPage on its own loopback port, naming backend, with
// the connection conn.
func startHost(t *testing.T, backend, conn string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, hostHTML(backend, conn))
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String()
}

func streamClients(b *backend) int {
	var h struct {
		Stream struct {
			Clients int `json:"clients"`
		} `json:"stream"`
	}
	b.getJSON("/healthz", &h)
	return h.Stream.Clients
}

func TestForeignHost(t *testing.T) {
	needBrowser(t)
	// The backend's CORS must name the host's origin: the host listens first.
	l := listen(t)
	hostAddr := l.Addr().String()
	hostOrigin := "http://" + hostAddr
	b := startBackend(t, "--cors-origins", hostOrigin)
	seed(b, "host-model", 11)

	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, hostHTML(b.URL(), absoluteConnection))
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })

	ctx := browser(t)
	start := time.Now()
	navigate(t, ctx, hostOrigin+"/")
	waitFrame(t, ctx, "embedded panel live", `document.querySelector("#conn").dataset.state === "live"`, 30*time.Second)
	record(t, fmt.Sprintf("foreign host: time to live data %d ms", time.Since(start).Milliseconds()))
	waitFrame(t, ctx, "queued tile", tileValue("queued")+` === "11"`, 5*time.Second)
	waitFrame(t, ctx, "chart drawn in the embedded panel", paintedPixels("chart-throughput")+" > 500", 10*time.Second)

	// Host styles stay out of the frame.
	var leak struct {
		TileDisplay, TileColor, Font string
	}
	if err := inFrame(ctx, `(()=>{const s=getComputedStyle(document.querySelector(".tile-value"));
		return {TileDisplay: getComputedStyle(document.querySelector(".tile")).display, TileColor: s.color, Font: s.fontFamily}})()`, &leak); err != nil {
		t.Fatal(err)
	}
	if leak.TileDisplay == "none" || leak.TileColor == "rgb(255, 0, 0)" || strings.HasPrefix(leak.Font, "serif") {
		t.Errorf("host styles reached the panel: %+v", leak)
	}
	// Panel styles stay out of the host: .note is the panel's class too.
	var hostNote string
	evalTop(t, ctx, `getComputedStyle(document.getElementById("host-note")).fontSize`, &hostNote)
	if hostNote != "16px" {
		t.Errorf("host .note font-size %s: the panel's styles leaked", hostNote)
	}
	// The documented custom property themes the panel.
	waitFrame(t, ctx, "theme custom property applied", `getComputedStyle(document.documentElement).getPropertyValue("--mm-accent").trim() === "rgb(255, 0, 255)"`, 5*time.Second)
	// The element sizes itself to the panel's content.
	var height float64
	evalTop(t, ctx, `window.panel.getBoundingClientRect().height`, &height)
	if height < 300 {
		t.Errorf("element height %.0f px: not sized to the panel", height)
	}
	// fill set later makes the frame fill the element; taking it away sizes
	// the element to the panel again.
	var filled, resized float64
	evalTop(t, ctx, `window.panel.style.height = "200px"; window.panel.setAttribute("fill", "");
		window.panel.shadowRoot.querySelector("iframe").getBoundingClientRect().height`, &filled)
	evalTop(t, ctx, `window.panel.removeAttribute("fill"); window.panel.style.height = "";
		window.panel.getBoundingClientRect().height`, &resized)
	if filled != 200 || resized != height {
		t.Errorf("frame height %.0f px with fill in a 200 px element, element %.0f px after, want 200 and %.0f", filled, resized, height)
	}
	shot(t, ctx, "embedded")

	// theme="dark" switches the panel to its dark palette.
	evalTop(t, ctx, `window.panel.setAttribute("theme", "dark"); true`, nil)
	waitFrame(t, ctx, "dark theme", `document.documentElement.dataset.theme === "dark" && getComputedStyle(document.body).backgroundColor === "rgb(13, 17, 23)"`, 5*time.Second)
	shot(t, ctx, "embedded-dark")
	evalTop(t, ctx, `window.panel.setAttribute("theme", "light"); true`, nil)
	waitFrame(t, ctx, "light theme", `document.documentElement.dataset.theme === "light"`, 5*time.Second)

	// Changing connection reconnects: a second backend, which allows the
	// frame's origin (the first backend) to read its stream.
	b2 := startBackend(t, "--cors-origins", b.URL())
	seed(b2, "second-backend-model", 99)
	evalTop(t, ctx, fmt.Sprintf(`window.panel.connection = {apiBase: %q}; true`, b2.URL()+"/api/metrics"), nil)
	waitFrame(t, ctx, "panel follows the new connection", tileValue("queued")+` === "99"`, 10*time.Second)
	if n := streamClients(b2); n != 1 {
		t.Errorf("second backend has %d stream clients, want 1", n)
	}
	// The backend notices a closed stream when a write fails, so give it
	// something to write until it does.
	waitFor(t, "first backend's stream closed", func() bool { sample(b, "host-model", 1, 1, 1); return streamClients(b) == 0 }, 10*time.Second)
	shot(t, ctx, "embedded-reconnected")

	// Removing the element closes the stream.
	evalTop(t, ctx, `window.panel.remove(); true`, nil)
	waitFor(t, "stream closed after removal", func() bool { sample(b2, "second-backend-model", 1, 1, 1); return streamClients(b2) == 0 }, 10*time.Second)
}

// TestForeignHostRefusedWithoutCORS: with no --cors-origins the backend
// allows no other origin, so the host cannot even load the loader module.
func TestForeignHostRefusedWithoutCORS(t *testing.T) {
	needBrowser(t)
	b := startBackend(t)
	host := startHost(t, b.URL(), absoluteConnection)
	ctx := browser(t)
	navigate(t, ctx, host+"/")
	var loadErr string
	deadline := time.Now().Add(10 * time.Second)
	for loadErr == "" && time.Now().Before(deadline) {
		evalTop(t, ctx, `window.loadError || ""`, &loadErr)
		time.Sleep(50 * time.Millisecond) // polling the page
	}
	if loadErr == "" {
		t.Fatal("the host loaded the panel from a backend that allows no other origin")
	}
	t.Logf("import refused as expected: %s", loadErr)
}

// waitFor polls cond (a backend-side check) until it holds.
func waitFor(t *testing.T, what string, cond func() bool, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(200 * time.Millisecond) // polling the backend
	}
}

// TestForeignHostReadmeSnippet: a host page on another origin that copies
// the README's snippet as written (relative apiBase) connects to the
// backend the loader came from, not to its own origin.
func TestForeignHostReadmeSnippet(t *testing.T) {
	needBrowser(t)
	l := listen(t)
	hostAddr := l.Addr().String()
	b := startBackend(t, "--cors-origins", "http://"+hostAddr)
	seed(b, "readme-model", 5)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r) // the host has no /api/metrics of its own
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, hostHTML(b.URL(), readmeConnection))
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })

	ctx := browser(t)
	navigate(t, ctx, "http://"+hostAddr+"/")
	waitFrame(t, ctx, "the README's snippet connects", `document.querySelector("#conn").dataset.state === "live"`, 30*time.Second)
	waitFrame(t, ctx, "its figures are the backend's", tileValue("queued")+` === "5"`, 5*time.Second)
	var conn struct{ APIBase string }
	evalTop(t, ctx, `({APIBase: window.panel.connection.apiBase})`, &conn)
	if conn.APIBase != b.URL()+"/api/metrics" {
		t.Errorf("apiBase resolved to %q, want the loader's backend %q", conn.APIBase, b.URL()+"/api/metrics")
	}
}

// TestTokenFromTheConnection: with serve --token, a run starts from an
// embedded panel whose connection carries the token, and is refused with a
// readable message from one whose connection does not.
func TestTokenFromTheConnection(t *testing.T) {
	needBrowser(t)
	for _, tc := range []struct {
		name, conn string
		started    bool
	}{
		{"with the token", `{ apiBase: "BACKEND/api/metrics", token: "s3cret-token" }`, true},
		{"without it", absoluteConnection, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := listen(t)
			hostAddr := l.Addr().String()
			b := startBackend(t, "--cors-origins", "http://"+hostAddr, "--token", "s3cret-token")
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				fmt.Fprint(w, hostHTML(b.URL(), tc.conn))
			})}
			go srv.Serve(l)
			t.Cleanup(func() { srv.Close() })
			ctx := browser(t)
			navigate(t, ctx, "http://"+hostAddr+"/")
			waitFrame(t, ctx, "embedded panel live", `document.querySelector("#conn").dataset.state === "live"`, 30*time.Second)
			click(t, ctx, `[data-tab="bench"]`)
			waitFrame(t, ctx, "Run enabled", `!!document.querySelector('[data-profile="smoke"] [data-action="run"]') && !document.querySelector('[data-profile="smoke"] [data-action="run"]').disabled`, 10*time.Second)
			click(t, ctx, `[data-profile="smoke"] [data-action="run"]`)
			if tc.started {
				waitFrame(t, ctx, "job running", `!!document.querySelector('.job[data-status]')`, 15*time.Second)
				click(t, ctx, `.job [data-action="cancel"]`)
				waitFrame(t, ctx, "cancelled", `!!document.querySelector('.job-ended[data-status="cancelled"]')`, 30*time.Second)
				return
			}
			waitFrame(t, ctx, "refusal shown", `(document.querySelector('[data-error="action"]')||{}).textContent?.includes("401")`, 10*time.Second)
			var jobs struct {
				Jobs []any `json:"jobs"`
			}
			b.getJSON("/api/metrics/bench", &jobs)
			if len(jobs.Jobs) != 0 {
				t.Errorf("%d jobs started without the token", len(jobs.Jobs))
			}
		})
	}
}
