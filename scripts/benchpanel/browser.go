package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/heapprofiler"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// counters is added to every document before its own scripts run: in the
// panel's frame it counts the stream's snapshot frames as the page
// receives them (and their characters), through a listener on each
// EventSource the panel opens, and keeps the wasm instance's memory, so
// that the Go heap's size can be read. It changes nothing the panel does.
const counters = `(() => {
	const b = window.__bench = {frames: 0, chars: 0, mem: null};
	const ES = window.EventSource;
	if (ES) window.EventSource = class extends ES {
		constructor(url, opts) {
			super(url, opts);
			this.addEventListener("snapshot", e => { b.frames++; b.chars += e.data.length; });
		}
	};
	for (const name of ["instantiate", "instantiateStreaming"]) {
		const f = WebAssembly[name];
		if (!f) continue;
		WebAssembly[name] = async function (...args) {
			const r = await f.apply(this, args);
			const inst = r.instance || r;
			if (inst.exports && inst.exports.mem) b.mem = inst.exports.mem;
			return r;
		};
	}
})()`

// frameJS is the panel's frame window, from the host page: the element's
// open shadow root holds it, and it is of the same origin.
const frameJS = `document.querySelector("mlx-metrics-panel").shadowRoot.querySelector("iframe").contentWindow`

// browser is one headless Chromium tab on the panel.
type browser struct {
	ctx    context.Context
	cancel func()
}

// newBrowser starts Chromium with a viewport of width × height CSS
// pixels.
func newBrowser(ctx context.Context, chromium string, width, height int64) (*browser, error) {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.WindowSize(int(width), int(height)),
	}
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	tctx, tcancel := chromedp.NewContext(actx)
	b := &browser{ctx: tctx, cancel: func() {
		cctx, c := context.WithTimeout(tctx, 20*time.Second)
		chromedp.Cancel(cctx) // closes Chromium through CDP, so it cleans up after itself
		c()
		tcancel()
		acancel()
	}}
	_, err := chromedp.Run(tctx, chromedp.Navigate("about:blank"))
	if err == nil {
		_, err = chromedp.Run(tctx, chromedp.EmulateViewport(width, height))
	}
	if err == nil {
		_, err = chromedp.Call(tctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: counters})
	}
	if err == nil {
		_, err = chromedp.Call(tctx, performance.Enable, performance.EnableParams{})
	}
	if err != nil {
		b.cancel()
		return nil, err
	}
	return b, nil
}

func (b *browser) close() { b.cancel() }

// eval evaluates expr in the host page (awaiting a promise) into out.
func (b *browser) eval(expr string, out any) error {
	yes := true
	r, err := chromedp.Call(b.ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: expr, ReturnByValue: &yes, AwaitPromise: &yes})
	if err != nil {
		return err
	}
	res, exc := r.Result, r.ExceptionDetails
	if exc != nil {
		msg := exc.Text
		if exc.Exception != nil && exc.Exception.Description != "" {
			msg = exc.Exception.Description
		}
		return fmt.Errorf("evaluating %.80q: %s", expr, msg)
	}
	if out == nil || res == nil || len(res.Value) == 0 {
		return nil
	}
	return json.Unmarshal(res.Value, out)
}

// open loads the host page at url and waits until the panel's stream is
// live and its tabs are there (want of them, the Fleet tab coming once the
// panel has asked the backend for a fleet).
func (b *browser) open(url string, tabs []string) error {
	if _, err := chromedp.Run(b.ctx, chromedp.Navigate(url)); err != nil {
		return err
	}
	sel := ""
	for _, t := range tabs {
		sel += fmt.Sprintf(` && !!d.querySelector('[data-tab=%q]')`, t)
	}
	return b.waitFor("the panel live with its tabs", `(()=>{try{const d=`+frameJS+`.document;
		return d.querySelector("#conn").dataset.state==="live"`+sel+`}catch(e){return false}})()`, 90*time.Second)
}

// waitFor polls expr in the host page until it is true.
func (b *browser) waitFor(what, expr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		var ok bool
		if lastErr = b.eval(expr, &ok); lastErr == nil && ok {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s: not within %s (last error %v)", what, timeout, lastErr)
}

// switchTo clicks tab's button in the panel and returns the time from the
// click to the animation frame after the view was rendered: its element
// there, every chart in it holding its canvas (ECharts draws at its
// setOption), nothing in it still loading, measured in the page with
// requestAnimationFrame, so the time includes any frame the page was busy
// with meanwhile.
func (b *browser) switchTo(tab string) (time.Duration, error) {
	var ms float64
	err := b.eval(fmt.Sprintf(`(async () => {
		const w = %s, d = w.document, id = "view-" + %q;
		const btn = d.querySelector('[data-tab=%q]');
		if (!btn) throw new Error("no tab %s");
		const ready = () => {
			const v = d.getElementById(id);
			if (!v || v.querySelector("[data-loading]")) return false;
			if (id === "view-fleet" && /Reading the fleet/.test(v.textContent)) return false;
			for (const c of v.querySelectorAll("[data-chart]")) if (!c.querySelector("canvas")) return false;
			return true;
		};
		const t0 = performance.now();
		btn.click();
		await new Promise((resolve, reject) => {
			const check = () => {
				if (ready()) w.requestAnimationFrame(() => resolve());
				else if (performance.now() - t0 > 60000) reject(new Error(id + " not rendered within 60 s"));
				else w.requestAnimationFrame(check);
			};
			w.requestAnimationFrame(check);
		});
		return performance.now() - t0;
	})()`, frameJS, tab, tab, tab), &ms)
	return time.Duration(ms * float64(time.Millisecond)), err
}

// sample is what the page has done up to one instant.
type sample struct {
	wall    time.Time
	metrics map[string]float64 // Performance.getMetrics
	frames  int                // snapshot frames received
	chars   int64              // their characters
	wasm    int64              // the wasm instance's memory, bytes
}

func (b *browser) sample() (sample, error) {
	s := sample{metrics: map[string]float64{}}
	var page struct {
		Frames int
		Chars  int64
		Wasm   int64
	}
	if err := b.eval(`(()=>{const b=`+frameJS+`.__bench; return {frames:b.frames, chars:b.chars, wasm:b.mem?b.mem.buffer.byteLength:0}})()`, &page); err != nil {
		return s, err
	}
	ms, err := chromedp.Call(b.ctx, performance.GetMetrics, cdp.Empty{})
	if err != nil {
		return s, err
	}
	s.wall = time.Now()
	for _, m := range ms.Metrics {
		s.metrics[m.Name] = m.Value
	}
	s.frames, s.chars, s.wasm = page.Frames, page.Chars, page.Wasm
	return s, nil
}

// gc forces a full garbage collection of the page's JS heap.
func (b *browser) gc() error {
	_, err := chromedp.Call(b.ctx, heapprofiler.CollectGarbage, cdp.Empty{})
	return err
}

// gcSample is a sample taken right after a forced collection: its
// JSHeapUsedSize is what is alive.
func (b *browser) gcSample() (sample, error) {
	if err := b.gc(); err != nil {
		return sample{}, err
	}
	return b.sample()
}
