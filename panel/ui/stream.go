package ui

import "github.com/maxence-charriere/go-app/v10/pkg/app"

// stream follows the snapshot SSE with the browser's EventSource. It never
// lets EventSource retry on its own: the panel owns retries so that it can
// show interrupted and retrying, and back off.
type stream struct {
	es    app.Value
	funcs []app.Func
}

// openStream connects to url. onData gets the data of each frame of the
// event type named; onError fires once when the connection fails or drops.
// Without EventSource (a native test) the stream is not open: open says.
func openStream(url, event string, onData func(data string), onError func()) *stream {
	s := &stream{}
	ctor := app.Window().Get("EventSource")
	if !ctor.Truthy() {
		return s
	}
	s.es = ctor.New(url)
	snap := app.FuncOf(func(this app.Value, args []app.Value) any {
		if len(args) > 0 {
			onData(args[0].Get("data").String())
		}
		return nil
	})
	failed := false
	fail := app.FuncOf(func(this app.Value, args []app.Value) any {
		if !failed {
			failed = true
			onError()
		}
		return nil
	})
	s.funcs = []app.Func{snap, fail}
	s.es.Call("addEventListener", event, snap)
	s.es.Call("addEventListener", "error", fail)
	return s
}

// open reports whether the stream connected (or is connecting).
func (s *stream) open() bool { return s != nil && s.es != nil && s.es.Truthy() }

func (s *stream) close() {
	if s == nil {
		return
	}
	if s.es != nil && s.es.Truthy() {
		s.es.Call("close")
	}
	for _, f := range s.funcs {
		f.Release()
	}
	s.funcs = nil
}

// watchVisibility calls h on the UI goroutine each time the page is hidden
// or shown again (the document's visibilitychange), until the returned
// func is called. A hidden panel closes its streams: a browser keeps at
// most six connections to a backend over HTTP/1.1, for all its tabs
// together, and each stream holds one for as long as it is open, so a few
// panel tabs in the background would leave the one in view none to load
// with. Outside a browser it watches nothing.
func watchVisibility(ctx app.Context, h func(ctx app.Context, hidden bool)) (stop func()) {
	doc := app.Window().Get("document")
	if !app.IsClient || !doc.Truthy() {
		return func() {}
	}
	f := app.FuncOf(func(this app.Value, args []app.Value) any {
		hidden := doc.Get("hidden").Bool()
		ctx.Dispatch(func(ctx app.Context) { h(ctx, hidden) })
		return nil
	})
	doc.Call("addEventListener", "visibilitychange", f)
	return func() {
		doc.Call("removeEventListener", "visibilitychange", f)
		f.Release()
	}
}

// pageHidden reports whether the page is hidden now (false outside a
// browser).
func pageHidden() bool {
	return app.IsClient && app.Window().Get("document").Get("hidden").Bool()
}
