package server

import (
	"context"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// Defaults of the body budget.
const (
	// DefaultBodyMemory bounds the request bodies held at once, across
	// all requests: three 32 MiB batches at once, read in full (each takes
	// its length and a byte), or many more smaller ones. With the rest of serve it keeps the process under
	// 512 MB whatever its clients send (docs/security.md).
	DefaultBodyMemory = 128 << 20
	// DefaultBodyWait is how long a request waits for its share of the
	// budget before it is answered 503 to send again.
	DefaultBodyWait = time.Second
)

// Budget bounds the bytes of request bodies held in memory by every
// request together. A body takes its share as its bytes arrive, never for
// what its header declares before they do, so a connection that declares
// 32 MiB and sends nothing holds nothing (ReadBody's firstShare says when
// the rest is set aside); a request that cannot have its share is refused
// (503), and what it held is given back.
type Budget struct {
	sem   *semaphore.Weighted
	size  int64
	wait  time.Duration
	clock clock.Clock

	held, peak, refused atomic.Int64
}

// NewBudget is a budget of size bytes (DefaultBodyMemory when 0); a
// request waits up to wait for its share (DefaultBodyWait when 0; no wait
// when negative), timed by clk (clock.Real when nil).
func NewBudget(size int64, wait time.Duration, clk clock.Clock) *Budget {
	if size <= 0 {
		size = DefaultBodyMemory
	}
	switch {
	case wait == 0:
		wait = DefaultBodyWait
	case wait < 0:
		wait = 0
	}
	if clk == nil {
		clk = clock.Real{}
	}
	return &Budget{sem: semaphore.NewWeighted(size), size: size, wait: wait, clock: clk}
}

// Size is the budget's bound in bytes.
func (b *Budget) Size() int64 { return b.size }

// take takes n bytes of the budget, waiting up to the budget's wait when
// wait is set; false when they were not had (counted as a refusal).
func (b *Budget) take(n int64, wait bool) bool {
	ok := b.sem.TryAcquire(n)
	if !ok && wait && b.wait > 0 && n <= b.size {
		ctx, cancel := context.WithCancel(context.Background())
		t := b.clock.AfterFunc(b.wait, cancel)
		ok = b.sem.Acquire(ctx, n) == nil
		t.Stop()
		cancel()
	}
	if !ok {
		b.refused.Add(1)
		return false
	}
	h := b.held.Add(n)
	for p := b.peak.Load(); h > p && !b.peak.CompareAndSwap(p, h); p = b.peak.Load() {
	}
	return true
}

// give gives n bytes back.
func (b *Budget) give(n int64) {
	if n > 0 {
		b.held.Add(-n)
		b.sem.Release(n)
	}
}

// BudgetStats is the /healthz section of the body budget.
type BudgetStats struct {
	Bytes   int64 `json:"bytes"`   // the bound
	Held    int64 `json:"held"`    // held now by bodies in flight
	Peak    int64 `json:"peak"`    // the most held at once since start
	Refused int64 `json:"refused"` // requests answered 503 for want of budget
}

// Stats returns the budget's figures now.
func (b *Budget) Stats() BudgetStats {
	return BudgetStats{Bytes: b.size, Held: b.held.Load(), Peak: b.peak.Load(), Refused: b.refused.Load()}
}
