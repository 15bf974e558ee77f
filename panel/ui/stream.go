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
