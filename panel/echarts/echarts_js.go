//go:build js && wasm

package echarts

import "syscall/js"

// Chart is a chart Set drew; the zero Chart is none.
type Chart struct{ v js.Value }

// Set draws option (ECharts option JSON) into the element with id,
// creating the chart on first use and resizing it with its element. It
// returns the chart and reports whether ECharts was there to draw.
func Set(id string, option []byte) (Chart, bool) {
	lib := js.Global().Get("echarts")
	el := js.Global().Get("document").Call("getElementById", id)
	if lib.IsUndefined() || el.IsNull() || el.IsUndefined() {
		return Chart{}, false
	}
	chart := lib.Call("getInstanceByDom", el)
	if chart.IsUndefined() || chart.IsNull() {
		chart = lib.Call("init", el, js.Null(), map[string]any{"renderer": "canvas"})
		// ECharts sizes its canvas once; follow the element from then on.
		observe(lib, el, chart)
	}
	opt := js.Global().Get("JSON").Call("parse", string(option))
	// replaceMerge drops series that left (a model unloaded) instead of
	// keeping their last values on screen.
	chart.Call("setOption", opt, map[string]any{"replaceMerge": []any{"series", "xAxis", "yAxis"}})
	return Chart{chart}, true
}

// Dispose releases c, whether or not its element is still in the
// document; a chart disposed already, or none, is left as it is.
func (c Chart) Dispose() {
	if c.v.IsUndefined() || c.v.IsNull() {
		return
	}
	if f := c.v.Get("isDisposed"); f.Type() == js.TypeFunction && c.v.Call("isDisposed").Truthy() {
		return
	}
	c.v.Call("dispose")
}

// disposed reports whether chart was disposed (the element left the page).
func disposed(lib, el, chart js.Value) bool {
	if f := chart.Get("isDisposed"); f.Type() == js.TypeFunction {
		return chart.Call("isDisposed").Truthy()
	}
	inst := lib.Call("getInstanceByDom", el)
	return inst.IsUndefined() || inst.IsNull()
}

// Charts out of view are not redrawn with every frame: a panel's view
// holds up to ten of them, most below the fold, and handing each its
// option costs ECharts some milliseconds. One IntersectionObserver keeps
// each observed element's state on the element (inViewKey) and calls its
// handler when it comes into view, so that the chart is brought up to date
// then. Its root is the implicit one, the top page's viewport, clipped by
// the frame: right whether the frame fills the window and scrolls (the
// standalone page) or is as tall as its content in a page that scrolls.
// (A rootMargin would not reach past the frame's clip, so there is none.)
const (
	inViewKey = "__mlxMetricsInView"
	// watchKey holds the number of the watch an element is under: handlers
	// are found by it, not by the element's id, because go-app reuses
	// elements and a gauge's element can take an id another element was
	// observed under a moment ago; ending the old watch must not remove the
	// new one's handler.
	watchKey = "__mlxMetricsWatch"
)

var (
	viewObserver js.Value
	handlers     = map[int]func(){} // by watch number (watchKey)
	lastWatch    int
)

// Observe calls shown each time the element with id comes into view (on
// the JS event loop: hand the work to the UI goroutine), and makes InView
// follow it, until stop is called. Without IntersectionObserver nothing
// is observed and InView is always true.
func Observe(id string, shown func()) (stop func()) {
	el := js.Global().Get("document").Call("getElementById", id)
	ctor := js.Global().Get("IntersectionObserver")
	if el.IsNull() || el.IsUndefined() || ctor.IsUndefined() {
		return func() {}
	}
	if viewObserver.IsUndefined() {
		cb := js.FuncOf(func(this js.Value, args []js.Value) any {
			entries := args[0]
			for i := range entries.Length() {
				e := entries.Index(i)
				target, in := e.Get("target"), e.Get("isIntersecting").Bool()
				target.Set(inViewKey, in)
				w := target.Get(watchKey)
				if w.Type() != js.TypeNumber || !in {
					continue
				}
				if h, ok := handlers[w.Int()]; ok {
					h()
				}
			}
			return nil
		}) // kept for the page's life, as the observer is
		viewObserver = ctor.New(cb)
	}
	lastWatch++
	n := lastWatch
	handlers[n] = shown
	el.Set(watchKey, n)
	viewObserver.Call("observe", el)
	return func() {
		delete(handlers, n)
		if w := el.Get(watchKey); w.Type() == js.TypeNumber && w.Int() == n {
			// Still this watch's element: nobody watches it now.
			viewObserver.Call("unobserve", el)
			el.Delete(inViewKey)
			el.Delete(watchKey)
		}
	}
}

// InView reports whether the element with id is in view, as last observed; true where that is not known (not observed, or not yet
// reported).
func InView(id string) bool {
	el := js.Global().Get("document").Call("getElementById", id)
	if el.IsNull() || el.IsUndefined() {
		return true
	}
	v := el.Get(inViewKey)
	return v.IsUndefined() || v.Bool()
}

func observe(lib, el, chart js.Value) {
	ro := js.Global().Get("ResizeObserver")
	if ro.IsUndefined() {
		return
	}
	var cb js.Func
	cb = js.FuncOf(func(this js.Value, args []js.Value) any {
		if disposed(lib, el, chart) {
			this.Call("disconnect")
			cb.Release()
			return nil
		}
		chart.Call("resize")
		return nil
	})
	ro.New(cb).Call("observe", el)
}
