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
