package engine

import (
	"container/list"
	"encoding/binary"
	"hash/fnv"
)

// kvCache is the paged KV cache: a fixed pool of pages of PageTokens tokens.
// A request reserves the pages for its prompt and its max_tokens when it is
// admitted, so a running request never waits for memory (no preemption);
// a request that does not fit yet waits in the queue.
type kvCache struct {
	total, used int
}

func (k *kvCache) free() int { return k.total - k.used }

// prefixCache keeps the KV of prompt blocks (PageTokens tokens each) keyed by
// the hash of the whole prefix up to and including the block, so a block
// only matches after the same preceding text. Least recently used blocks
// are evicted past the byte budget. Hits and misses count prompt tokens, as
// vLLM's prefix-cache counters do.
type prefixCache struct {
	blockBytes int64
	budget     int64
	lru        *list.List // of uint64, front = most recent
	blocks     map[uint64]*list.Element
	hits       int64
	misses     int64
}

func newPrefixCache(blockBytes, budget int64) *prefixCache {
	return &prefixCache{blockBytes: blockBytes, budget: budget, lru: list.New(), blocks: map[uint64]*list.Element{}}
}

func (p *prefixCache) bytes() int64 { return int64(len(p.blocks)) * p.blockBytes }

// blockHashes chains the hashes of prompt's full blocks.
func blockHashes(prompt []uint64, blockTokens int) []uint64 {
	n := len(prompt) / blockTokens
	hashes := make([]uint64, n)
	var prev uint64
	buf := make([]byte, 8)
	for i := range n {
		h := fnv.New64a()
		binary.LittleEndian.PutUint64(buf, prev)
		h.Write(buf)
		for _, t := range prompt[i*blockTokens : (i+1)*blockTokens] {
			binary.LittleEndian.PutUint64(buf, t)
			h.Write(buf)
		}
		prev = h.Sum64()
		hashes[i] = prev
	}
	return hashes
}

// lookup counts the prompt tokens served from the cache: the longest run of
// cached leading blocks, leaving at least one token to prefill (the step
// that yields the first token).
func (p *prefixCache) lookup(prompt []uint64, blockTokens int) int {
	cached := 0
	if p.budget > 0 {
		for _, h := range blockHashes(prompt, blockTokens) {
			el, ok := p.blocks[h]
			if !ok {
				break
			}
			p.lru.MoveToFront(el)
			cached += blockTokens
		}
	}
	if cached >= len(prompt) {
		cached = len(prompt) - 1
	}
	p.hits += int64(cached)
	p.misses += int64(len(prompt) - cached)
	return cached
}

// insert stores prompt's full blocks, evicting the least recently used.
func (p *prefixCache) insert(prompt []uint64, blockTokens int) {
	if p.budget < p.blockBytes {
		return
	}
	for _, h := range blockHashes(prompt, blockTokens) {
		if el, ok := p.blocks[h]; ok {
			p.lru.MoveToFront(el)
			continue
		}
		p.blocks[h] = p.lru.PushFront(h)
		for p.bytes() > p.budget {
			old := p.lru.Back()
			p.lru.Remove(old)
			delete(p.blocks, old.Value.(uint64))
		}
	}
}
