//go:build js && wasm

package echarts

import "syscall/js"

// drawn holds the chart drawn under each id. Dispose needs it: by the time a
// component is dismounted its element has left the document, so it cannot
// be found by id any more.
var drawn = map[string]js.Value{}

// Set draws option (ECharts option JSON) into the element with id,
// creating the chart on first use and resizing it with its element. It
// reports whether ECharts was there to draw.
func Set(id string, option []byte) bool {
	lib := js.Global().Get("echarts")
	el := js.Global().Get("document").Call("getElementById", id)
	if lib.IsUndefined() || el.IsNull() || el.IsUndefined() {
		return false
	}
	chart := lib.Call("getInstanceByDom", el)
	if chart.IsUndefined() || chart.IsNull() {
		chart = lib.Call("init", el, js.Null(), map[string]any{"renderer": "canvas"})
		// ECharts sizes its canvas once; follow the element from then on.
		observe(lib, el, chart)
	}
	drawn[id] = chart
	opt := js.Global().Get("JSON").Call("parse", string(option))
	// replaceMerge drops series that left (a model unloaded) instead of
	// keeping their last values on screen.
	chart.Call("setOption", opt, map[string]any{"replaceMerge": []any{"series", "xAxis", "yAxis"}})
	return true
}

// Dispose releases the chart last drawn under id, if any, whether or not
// its element is still in the document.
func Dispose(id string) {
	chart, ok := drawn[id]
	if !ok {
		return
	}
	delete(drawn, id)
	chart.Call("dispose")
}

// disposed reports whether chart was disposed (the element left the page).
func disposed(lib, el, chart js.Value) bool {
	if f := chart.Get("isDisposed"); f.Type() == js.TypeFunction {
		return chart.Call("isDisposed").Truthy()
	}
	inst := lib.Call("getInstanceByDom", el)
	return inst.IsUndefined() || inst.IsNull()
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
