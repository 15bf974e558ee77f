package stream

import (
	"os"
	"time"
)

// Go's scheduler reads the network (a request arriving) when a processor
// runs out of goroutines to run, or from its monitor thread every 10 ms
// or so. A fan-out keeps every processor busy while it lasts (some 20 ms
// for 1,000 clients on two cores), so a POST of events arriving during
// one was read only at its end, and every client written meanwhile was
// sent a snapshot without it, however fresh fresher made the frame.
//
// So a fan-out pauses yieldEvery after it began or last resumed: the
// client whose turn it is to pass on holds the turn, and so does each
// one after it until the pause ends. The writers run out, a processor
// polls the network, and the poll wakes the goroutine reading the pause's
// pipe together with any request that arrived meanwhile; that goroutine
// passes on the turns held. A pause costs a one-byte write and read.
const yieldEvery = time.Millisecond

// pause holds a fan-out's turns for the network poller (above).
type pause struct {
	r, w *os.File
	// Under Hub.wakeMu:
	since time.Time // when the fan-out began or last resumed
	held  int       // turns held; a pause is on while more than 0
}

// startPauses opens the pipe that ends pauses and starts its reader.
// Without one (out of file descriptors) fan-outs do not pause.
func (h *Hub) startPauses() {
	r, w, err := os.Pipe()
	if err != nil {
		return
	}
	h.pause = &pause{r: r, w: w}
	h.loop.Add(1)
	go func() {
		defer h.loop.Done()
		defer r.Close()
		var b [1]byte
		for {
			if _, err := r.Read(b[:]); err != nil {
				return // Close closed the write end
			}
			h.endPause()
		}
	}()
}

// beginFanOut notes that a tick began a fan-out at now.
func (h *Hub) beginFanOut(now time.Time) {
	if h.pause == nil {
		return
	}
	h.wakeMu.Lock()
	h.pause.since = now
	h.wakeMu.Unlock()
}

// passTurn is a client's pass-on: it wakes the next client of the wake
// queue, or holds the turn when the fan-out is due a pause.
func (h *Hub) passTurn() {
	h.wakeMu.Lock()
	p := h.pause
	if p == nil || len(h.wakeQ) == 0 || p.held == 0 && h.opts.Clock.Now().Sub(p.since) < h.opts.pauseEvery {
		h.passOnLocked(1)
		h.wakeMu.Unlock()
		return
	}
	p.held++
	first := p.held == 1
	h.wakeMu.Unlock()
	if first {
		h.pauses.Add(1)
		// The pipe holds at most this byte: the next is written only
		// after the reader took this one and ended the pause.
		if _, err := p.w.Write([]byte{0}); err != nil {
			h.endPause() // closing: hand the turns on here
		}
	}
}

// endPause passes on the turns held and starts the next stretch of the
// fan-out.
func (h *Hub) endPause() {
	h.wakeMu.Lock()
	defer h.wakeMu.Unlock()
	n := h.pause.held
	h.pause.held, h.pause.since = 0, h.opts.Clock.Now()
	h.passOnLocked(n)
}

// stopPauses closes the pipe's write end, which ends its reader; no client
// may pass on any more.
func (h *Hub) stopPauses() {
	if h.pause != nil {
		h.pause.w.Close()
	}
}
