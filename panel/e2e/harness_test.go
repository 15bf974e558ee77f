package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

var (
	root       string // repository root
	binary     string // the backend, built with the embedded panel
	chromium   string
	outDir     string
	skipReason string

	allocCtx context.Context
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	chromium = os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		skipReason = "chromium not found at " + chromium + " (install Debian chromium: scripts/setup), browser tests skipped"
		fmt.Fprintln(os.Stderr, "e2e: "+skipReason)
		return m.Run()
	}
	wd, _ := os.Getwd()
	root = filepath.Clean(filepath.Join(wd, "..", ".."))
	if _, err := os.Stat(filepath.Join(root, "backend/internal/webui/dist/index.html")); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: the panel is not built: run scripts/build-panel first")
		return 1
	}
	tmp, err := os.MkdirTemp("", "mlx-metrics-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	binary = filepath.Join(tmp, "mlx-metrics")
	build := exec.Command("go", "build", "-o", binary, "./backend/cmd/mlx-metrics")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building the backend:", err)
		return 1
	}
	outDir = os.Getenv("E2E_OUT")
	if outDir == "" {
		outDir = filepath.Join(root, "out", "e2e")
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.WindowSize(1280, 900),
	}
	var cancel context.CancelFunc
	allocCtx, cancel = chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	return m.Run()
}

func needBrowser(t *testing.T) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
}

// backend is one running `mlx-metrics serve`.
type backend struct {
	t    *testing.T
	addr string // empty until the first start has bound a free port
	home string
	args []string
	cmd  *exec.Cmd
	// exited has the backend's exit once it has ended (its Wait).
	exited <-chan error
	log    *serveLog
}

// closedPort is a loopback address that was listened on and closed:
// nothing answers there.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// listen is a loopback listener on a free port, for a host page served
// beside the backend: listened on before the backend is told its address,
// so no other process can take the port in between.
func listen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// startBackend runs the backend with a fresh home on a free loopback port
// it binds itself (--addr 127.0.0.1:0) and names in its log.
func startBackend(t *testing.T, args ...string) *backend {
	t.Helper()
	b := &backend{t: t, home: t.TempDir(), args: args}
	b.start()
	t.Cleanup(b.stop)
	return b
}

func (b *backend) URL() string { return "http://" + b.addr }

// serveLog keeps the backend's output and hands over the address of its
// "serving on http://ADDR" line, once.
type serveLog struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	addr  chan string
	found bool
}

var servingOn = regexp.MustCompile(`serving on http://(\S+) `)

func (l *serveLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if m := servingOn.FindSubmatch(l.buf.Bytes()); m != nil && !l.found {
		l.found = true
		l.addr <- string(m[1])
	}
	return len(p), nil
}

func (l *serveLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// start runs the backend: on a port of its own choosing the first time,
// on the same address again after a stop (a panel reconnects to it).
func (b *backend) start() {
	b.t.Helper()
	addr := b.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	b.log = &serveLog{addr: make(chan string, 1)}
	args := append([]string{"serve", "--addr", addr, "--home", b.home}, b.args...)
	b.cmd = exec.Command(binary, args...)
	b.cmd.Stdout, b.cmd.Stderr = b.log, b.log
	dieWithTest(b.cmd)
	if err := b.cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	exited := make(chan error, 1)
	cmd := b.cmd
	go func() { exited <- cmd.Wait() }()
	b.exited = exited
	select {
	case b.addr = <-b.log.addr:
	case err := <-exited:
		b.t.Fatalf("backend exited before serving (%v):\n%s", err, b.log)
	case <-time.After(20 * time.Second):
		b.t.Fatalf("backend did not say where it serves within 20 s:\n%s", b.log)
	}
}

func (b *backend) stop() {
	if b.cmd == nil || b.cmd.Process == nil {
		return
	}
	b.cmd.Process.Kill()
	<-b.exited
	b.cmd = nil
}

// post sends events (JSON values) to POST /api/metrics/events.
func (b *backend) post(events ...string) {
	b.t.Helper()
	body := "[" + strings.Join(events, ",") + "]"
	res, err := http.Post(b.URL()+"/api/metrics/events", "application/json", strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	var reply struct {
		Accepted, Rejected int
		Errors             []any
	}
	json.NewDecoder(res.Body).Decode(&reply)
	if reply.Rejected > 0 || res.StatusCode/100 != 2 {
		b.t.Fatalf("events rejected (%d): %+v", res.StatusCode, reply)
	}
}

// getJSON decodes GET path into out.
func (b *backend) getJSON(path string, out any) {
	b.t.Helper()
	res, err := http.Get(b.URL() + path)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		b.t.Fatal(err)
	}
}

// event renders one serving event at now, in the host's flat form: data's
// fields beside type and at.
func event(typ string, data string) string {
	fields := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(data), "{"), "}"))
	if fields != "" {
		fields = "," + fields
	}
	return fmt.Sprintf(`{"type":%q,"at":%d%s}`, typ, time.Now().UnixMilli(), fields)
}

// browser opens a tab for the test; dialogs (alert) fail the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(allocCtx)
	// The watchers below log to t: they must end before the test does.
	var watchers sync.WaitGroup
	t.Cleanup(func() {
		closeBrowser(t, ctx, cancel)
		watchers.Wait()
	})
	if _, err := chromedp.Run(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	// The page's console errors and exceptions go to the test log.
	messages := chromedp.Console(ctx)
	watchers.Go(func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if s := fmt.Sprint(m); strings.Contains(strings.ToLower(s), "error") || os.Getenv("E2E_CONSOLE") != "" {
				t.Logf("console: %s", s)
			}
		}
	})
	dialogs := make(chan string, 8)
	err := chromedp.Listen(ctx, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			msg = string(ev.Type) + ": " + ev.Message
		case page.EventJavascriptDialogOpening:
			msg = string(ev.Type) + ": " + ev.Message
		default:
			return
		}
		select {
		case dialogs <- msg:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	watchers.Go(func() {
		for {
			select {
			case msg := <-dialogs:
				t.Errorf("a dialog opened (%s): event text ran as script", msg)
				chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
			case <-ctx.Done():
				return
			}
		}
	})
	return ctx
}

// closeBrowser closes the test's Chromium through CDP, so that it removes
// its /tmp/org.chromium.Chromium.* singleton directory on the way out; a
// killed one (a plain cancel) leaves that directory behind. A browser that
// does not close within the timeout is killed.
func closeBrowser(t *testing.T, ctx context.Context, cancel context.CancelFunc) {
	defer cancel()
	cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
	defer ccancel()
	if err := chromedp.Cancel(cctx); err != nil {
		t.Logf("closing chromium: %v", err)
	}
}

func navigate(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("navigate %s: %v", url, err)
	}
}

// evalTop evaluates expr in the top page.
func evalTop(t *testing.T, ctx context.Context, expr string, out any) {
	t.Helper()
	res, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: expr, ReturnByValue: ptr(true), AwaitPromise: ptr(true)})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExceptionDetails != nil {
		t.Fatalf("evaluating %q: %s", expr, exceptionText(res.ExceptionDetails))
	}
	if out != nil && res.Result != nil && len(res.Result.Value) > 0 {
		if err := json.Unmarshal(res.Result.Value, out); err != nil {
			t.Fatal(err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// worlds caches the isolated world made in each panel frame.
var worlds sync.Map // cdp.FrameID -> runtime.ExecutionContextID

// inFrame evaluates expr in the panel's frame (found by its URL below the
// host page) in an isolated world: the frame's DOM, not its globals.
func inFrame(ctx context.Context, expr string, out any) error {
	tree, err := chromedp.Call(ctx, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		return err
	}
	id := findFrame(tree.FrameTree)
	if id == "" {
		return fmt.Errorf("no panel frame yet")
	}
	var world runtime.ExecutionContextID
	if w, ok := worlds.Load(id); ok {
		world = w.(runtime.ExecutionContextID)
	} else {
		w, err := chromedp.Call(ctx, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{FrameID: id, WorldName: "e2e"})
		if err != nil {
			return err
		}
		world = w.ExecutionContextID
		worlds.Store(id, world)
	}
	res, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{
		Expression: expr, ContextID: world, ReturnByValue: ptr(true), AwaitPromise: ptr(true),
	})
	if err != nil {
		// The frame navigated (reload): make a new world next time.
		worlds.Delete(id)
		return err
	}
	if res.ExceptionDetails != nil {
		return fmt.Errorf("evaluating %q: %s", expr, exceptionText(res.ExceptionDetails))
	}
	if out == nil || res.Result == nil || len(res.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(res.Result.Value, out)
}

func findFrame(t *page.FrameTree) cdp.FrameID {
	if t == nil {
		return ""
	}
	if strings.Contains(t.Frame.URL, "/api/metrics/panel/") {
		return t.Frame.ID
	}
	for _, c := range t.ChildFrames {
		if id := findFrame(c); id != "" {
			return id
		}
	}
	return ""
}

// waitFrame polls expr in the frame until it returns true or timeout
// passes, and reports how long it took.
func waitFrame(t *testing.T, ctx context.Context, what, expr string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var lastErr error
	for time.Since(start) < timeout {
		// One evaluation may not outlast the wait either (a busy page).
		var ok bool
		pctx, cancel := context.WithTimeout(ctx, timeout-time.Since(start))
		lastErr = inFrame(pctx, expr, &ok)
		cancel()
		if lastErr == nil && ok {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond) // polling the browser, which has no callback into the test
	}
	shot(t, ctx, "timeout-"+strings.ReplaceAll(what, " ", "-"))
	t.Fatalf("%s: not within %s (last error %v)", what, timeout, lastErr)
	return 0
}

// frameText is the text of the first element matching selector in the frame.
func frameText(t *testing.T, ctx context.Context, selector string) string {
	t.Helper()
	var s string
	if err := inFrame(ctx, fmt.Sprintf(`(document.querySelector(%q)||{}).textContent||""`, selector), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// click clicks the first element matching selector in the frame.
func click(t *testing.T, ctx context.Context, selector string) {
	t.Helper()
	var ok bool
	if err := inFrame(ctx, fmt.Sprintf(`(()=>{const e=document.querySelector(%q); if(!e) return false; e.click(); return true})()`, selector), &ok); err != nil || !ok {
		t.Fatalf("click %s: %v (found %v)", selector, err, ok)
	}
}

// paintedPixels counts non-transparent pixels of the canvas in the chart
// element with id: more than a few means ECharts drew.
func paintedPixels(id string) string {
	return fmt.Sprintf(`(()=>{const c=document.querySelector("#%s canvas"); if(!c||!c.width) return 0;
	const d=c.getContext("2d").getImageData(0,0,c.width,c.height).data; let n=0;
	for(let i=3;i<d.length;i+=4) if(d[i]) n++; return n})()`, id)
}

// checkAligned fails the test when a table in the frame aligns a header
// otherwise than the cells under it (numbers right, under right-aligned
// headers).
func checkAligned(t *testing.T, ctx context.Context, where string) {
	t.Helper()
	var bad []string
	if err := inFrame(ctx, `(()=>{const bad=[];
		for (const tb of document.querySelectorAll("table")) {
			const hs=[...tb.querySelectorAll("thead th")];
			for (const tr of tb.querySelectorAll("tbody tr")) {
				const cs=[...tr.children]; if (cs.length!==hs.length) continue;
				cs.forEach((c,i)=>{const a=getComputedStyle(hs[i]).textAlign, b=getComputedStyle(c).textAlign;
					const k=tb.className+" / "+hs[i].textContent+": "+a+" over "+b; if (a!==b && !bad.includes(k)) bad.push(k)});
			}
		}
		return bad})()`, &bad); err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Errorf("%s: headers aligned otherwise than their cells: %q", where, bad)
	}
}

func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(outDir, t.Name()+"-"+name+".png")
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		t.Logf("screenshot %s: %v", name, err)
	}
}

func exceptionText(d *runtime.ExceptionDetails) string {
	if d.Exception != nil && d.Exception.Description != "" {
		return d.Exception.Description
	}
	return d.Text
}
