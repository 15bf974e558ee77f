// Package app is serve's composition root. The backend is a few parts (the
// live half, bench-serve, the export side, the HTTP server, the reference
// engine), each offering the handlers of its routes and ending with Close;
// the route table (Routes) wires the handlers; an App holds the parts
// in the order they started and closes them in reverse, so teardown is one
// call instead of a hand-ordered list of deferred stops. Start wires them
// from one Config; cmd/mlx-metrics keeps only the flags that fill it.
package app

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// A Part is one started piece of the backend: the handlers of its routes
// (none for some), which Handlers sets in h, and how it ends. Close ends
// what the part started and releases what it holds; ctx bounds how long it
// may wait (a part that needs its own bound derives it from ctx).
type Part interface {
	Handlers(h *Handlers)
	Close(ctx context.Context) error
}

// An App holds the started parts in order. The zero value is an empty App
// ready to use. Parts are told apart with ==, so each should be a pointer.
type App struct {
	mu     sync.Mutex
	parts  []Part // started, in order
	closed []bool // closed[i]: parts[i] has been closed (or is closing)
}

// Add records p as started, after the parts added before it.
func (a *App) Add(p Part) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.parts = append(a.parts, p)
	a.closed = append(a.closed, false)
}

// Handlers is every part's handlers, each part's set in the order the
// parts were added.
func (a *App) Handlers() Handlers {
	a.mu.Lock()
	defer a.mu.Unlock()
	var h Handlers
	for _, p := range a.parts {
		p.Handlers(&h)
	}
	return h
}

// Close closes the parts not closed yet in the reverse order of Add, each
// at most once, passing ctx to each, and returns their errors joined with
// errors.Join. Closing again closes only the parts added since.
func (a *App) Close(ctx context.Context) error {
	var errs []error
	for {
		p, ok := a.last()
		if !ok {
			return errors.Join(errs...)
		}
		errs = append(errs, p.Close(ctx))
	}
}

// CloseFirst closes the given parts now, in the order given, ahead of the
// order Close follows; Close then skips them. It is for a part that must
// end before one added after it: the HTTP server's Shutdown waits for the
// requests in flight, and an event stream or a run's event follower stays
// in flight until the part that feeds it ends. Parts not added to a, and
// parts already closed, are skipped.
func (a *App) CloseFirst(ctx context.Context, parts ...Part) error {
	var errs []error
	for _, p := range parts {
		if a.claim(p) {
			errs = append(errs, p.Close(ctx))
		}
	}
	return errors.Join(errs...)
}

// last claims the last part not closed yet. The lock is not held while a
// part closes, so a part's Close may call CloseFirst.
func (a *App) last() (Part, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := len(a.parts) - 1; i >= 0; i-- {
		if !a.closed[i] {
			a.closed[i] = true
			return a.parts[i], true
		}
	}
	return nil, false
}

// claim marks p closed and reports whether it was a part of a not closed yet.
func (a *App) claim(p Part) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	i := slices.Index(a.parts, p)
	if i < 0 || a.closed[i] {
		return false
	}
	a.closed[i] = true
	return true
}
