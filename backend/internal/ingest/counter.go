package ingest

import (
	"sync"
	"sync/atomic"
)

// Counter counts what one source brought in.
type Counter struct {
	accepted, rejected atomic.Uint64

	mu   sync.Mutex
	last *Rejection
}

// CounterStats is a Counter's reading.
type CounterStats struct {
	Accepted      uint64     `json:"accepted"`
	Rejected      uint64     `json:"rejected"`
	LastRejection *Rejection `json:"lastRejection,omitempty"`
}

func (c *Counter) accept() { c.accepted.Add(1) }

func (c *Counter) reject(r Rejection) {
	c.rejected.Add(1)
	c.mu.Lock()
	c.last = &r
	c.mu.Unlock()
}

// Stats reads the counter.
func (c *Counter) Stats() CounterStats {
	c.mu.Lock()
	last := c.last
	c.mu.Unlock()
	return CounterStats{Accepted: c.accepted.Load(), Rejected: c.rejected.Load(), LastRejection: last}
}
