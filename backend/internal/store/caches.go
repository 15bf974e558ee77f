package store

import (
	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// modelCaches is one model's latest kv and prefix readings, each with the
// sample it came from so a repeat or an older sample changes nothing.
// Readings are held by value: a sample costs no allocation.
type modelCaches struct {
	model      string
	kv, prefix reading
}

type reading struct {
	set    bool
	at     int64
	sample events.CacheSample
}

// apply takes a sample newer than the one held (or the first one) and
// reports whether it changed anything.
func (c *modelCaches) apply(at int64, p *events.CacheSample) bool {
	slot := &c.kv
	if p.Cache == events.CachePrefix {
		slot = &c.prefix
	}
	if r := slot; r.set && (at < r.at || at == r.at && sameCache(&r.sample, p)) {
		return false // out of order, or a repeat
	}
	*slot = reading{set: true, at: at, sample: *p}
	return true
}

// view is the snapshot's entry: a kv reading as bytes and capacity; a
// prefix reading with its lookups (0 when the engine reports none) and
// hit rate, null before any lookup.
func (c *modelCaches) view() snapshot.Cache {
	out := snapshot.Cache{Model: c.model}
	if r := c.kv; r.set {
		out.KV = &snapshot.KVCache{At: r.at, Bytes: r.sample.Bytes, CapacityBytes: r.sample.CapacityBytes, UsageRatio: r.sample.UsageRatio}
	}
	if r := c.prefix; r.set {
		p := &snapshot.PrefixCache{At: r.at, Bytes: r.sample.Bytes, CapacityBytes: r.sample.CapacityBytes, UsageRatio: r.sample.UsageRatio}
		if r.sample.Hits != nil {
			p.Hits = *r.sample.Hits
		}
		if r.sample.Misses != nil {
			p.Misses = *r.sample.Misses
		}
		// Both bounded by events.MaxLookups, so the sum cannot overflow.
		if n := p.Hits + p.Misses; n > 0 {
			p.HitRate = ptr(float64(p.Hits) / float64(n))
		}
		out.Prefix = p
	}
	return out
}

func sameCache(a, b *events.CacheSample) bool {
	return a.Model == b.Model && a.Cache == b.Cache && a.Bytes == b.Bytes &&
		samePtr(a.CapacityBytes, b.CapacityBytes) && samePtr(a.Hits, b.Hits) &&
		samePtr(a.Misses, b.Misses) && samePtr(a.UsageRatio, b.UsageRatio)
}

// samePtr reports whether two optional values are both absent or equal.
func samePtr[T comparable](a, b *T) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}
