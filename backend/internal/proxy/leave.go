package proxy

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// watchAfter is how long the proxy waits for an answer's head before it
// watches the client's connection for the client leaving. A streamed
// answer's head comes at once, and a client that leaves one is noticed by
// the write that fails; a non-streamed completion's head comes when the
// whole completion is done, and until then nothing else would notice
// (fasthttp reads nothing while a handler runs), so the engine would
// generate to the end for no one. A short wait is not watched: that costs
// a goroutine and a syscall per request on the way to the first token.
const watchAfter = time.Second

// leaveWatch cancels the upstream request when the client leaves while
// the proxy waits for the answer's head.
type leaveWatch struct {
	timer clock.Timer
	left  atomic.Bool // the client's connection ended: the request was cancelled for it

	mu   sync.Mutex
	stop func() // ends the watch once started (nil before)
	done bool   // end was called: the watch must not start
}

// watchLeave starts watching conn after watchAfter on clk; cancel is the
// upstream request's.
func watchLeave(clk clock.Clock, conn net.Conn, cancel context.CancelFunc) *leaveWatch {
	w := &leaveWatch{}
	w.timer = clk.AfterFunc(watchAfter, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if !w.done {
			w.stop = watchConn(conn, func() { w.left.Store(true); cancel() })
		}
	})
	return w
}

// end stops the watch, waiting for it to let go of the connection; it
// says whether the client left.
func (w *leaveWatch) end() bool {
	w.timer.Stop()
	w.mu.Lock()
	w.done = true
	stop := w.stop
	w.mu.Unlock()
	if stop != nil {
		stop()
	}
	return w.left.Load()
}
