package engine

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// request is one generation as the scheduler tracks it.
type request struct {
	id uint64
	// seed picks the generated words: a function of the prompt alone, as
	// a real server's greedy output is, so two engines answer one prompt
	// alike (bench-serve's parity probes) whatever each served before.
	seed      uint64
	prompt    []uint64
	maxTokens int
	// ctx is the caller's: once it ends the request is cancelled. Its Err
	// is read at each step, so a cancel is seen at the next step whenever
	// the wake-up that AfterFunc sends arrives.
	ctx context.Context
	out *Stream

	arrived, admitted, firstToken, lastToken time.Time
	cached                                   int // prompt tokens served by the prefix cache
	prefilled                                int // prompt tokens processed, cached ones included
	generated                                int
	pages                                    int
}

func (r *request) prefilling() bool { return r.prefilled < len(r.prompt) }

func (r *request) cancelled() bool { return r.ctx.Err() != nil }

// maxLag is how far the step chain may fall behind wall time (a busy
// machine, a late timer) and still catch up; beyond it the engine is simply
// slower, and the figures it reports say so.
const maxLag = 25 * time.Millisecond

// schedule is the continuous-batching loop: admit, run one step, repeat.
// Step ends are deadlines chained one after another, so small delays in
// waking do not add up and the rates stay the cost model's.
func (e *Engine) schedule(ctx context.Context) error {
	var stepEnd time.Time
	for {
		now := e.clock.Now()
		e.admit(now)
		if len(e.running) == 0 {
			if e.stats.busy {
				e.stats.busy = false
				e.emitSamples(now)
			}
			select {
			case <-e.wake:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if !e.stats.busy {
			e.stats = sampleStats{busy: true, lastSample: now}
			stepEnd = now
		}
		if now.Sub(stepEnd) > maxLag {
			stepEnd = now // fell far behind: restart the chain at now
		}
		if e.lastAdmit.After(stepEnd) {
			// A step holding a request cannot start before it was admitted.
			stepEnd = e.lastAdmit
		}

		// Plan the step: prefill chunks first come first served, one token
		// for each row past its prefill.
		budget := e.cfg.PrefillChunk
		chunks := make([]int, len(e.running))
		prefillTokens, decodeRows := 0, 0
		for i, r := range e.running {
			if r.prefilling() {
				n := min(budget, len(r.prompt)-r.prefilled)
				chunks[i] = n
				budget -= n
				prefillTokens += n
			} else {
				decodeRows++
			}
		}
		next := stepEnd.Add(e.cfg.StepTime(prefillTokens, decodeRows))
		if err := clock.SleepUntil(ctx, e.clock, next); err != nil {
			return err
		}
		stepEnd = next
		e.apply(chunks, stepEnd)
		if stepEnd.Sub(e.stats.lastSample) >= e.cfg.SampleInterval {
			e.emitSamples(stepEnd)
		}
	}
}

// admit moves arrivals into the FIFO queue, drops cancelled waiters, and
// admits from the head while a row and the KV pages for it are free.
func (e *Engine) admit(now time.Time) {
	e.mu.Lock()
	e.waiting = append(e.waiting, e.incoming...)
	e.incoming = nil
	e.mu.Unlock()
	kept := e.waiting[:0]
	for _, r := range e.waiting {
		if r.cancelled() {
			e.finish(r, events.FinishCancelled, now)
			continue
		}
		kept = append(kept, r)
	}
	e.waiting = kept
	if !e.ready.Load() {
		return
	}
	for len(e.waiting) > 0 && len(e.running) < e.cfg.BatchCapacity {
		r := e.waiting[0]
		need := e.cfg.pagesFor(len(r.prompt) + r.maxTokens)
		if need > e.kv.free() {
			break // head of line waits for memory; FIFO keeps it fair
		}
		e.waiting = e.waiting[1:]
		e.kv.used += need
		r.pages = need
		// now was read before the arrivals were taken: one that came in
		// between is admitted as it arrived, never before (a negative
		// queue time, which the events' bounds refuse).
		r.admitted = now
		if r.arrived.After(now) {
			r.admitted = r.arrived
		}
		e.lastAdmit = r.admitted
		r.cached = e.prefix.lookup(r.prompt, e.cfg.PageTokens)
		r.prefilled = r.cached
		e.running = append(e.running, r)
	}
}

// apply the step that ended at t: advance prefills, emit tokens, retire rows.
func (e *Engine) apply(chunks []int, t time.Time) {
	kept := e.running[:0]
	for i, r := range e.running {
		if r.cancelled() {
			e.finish(r, events.FinishCancelled, t)
			continue
		}
		if r.prefilling() {
			r.prefilled += chunks[i]
			if r.prefilling() {
				kept = append(kept, r)
				continue
			}
			e.prefix.insert(r.prompt, e.cfg.PageTokens)
			r.firstToken = t
		}
		r.out.push(Token{Text: " " + word(r.seed, r.generated), At: t})
		r.generated++
		r.lastToken = t
		e.stats.tokens++
		if r.generated >= r.maxTokens {
			e.finish(r, events.FinishLength, t)
			continue
		}
		kept = append(kept, r)
	}
	clear(e.running[len(kept):])
	e.running = kept
}

// finish ends r, frees its pages and reports request.finished.
func (e *Engine) finish(r *request, finish events.FinishReason, t time.Time) {
	e.kv.used -= r.pages
	r.pages = 0
	res := Result{Finish: finish, PromptTokens: len(r.prompt), CachedPromptTokens: r.cached, CompletionTokens: r.generated}
	if finish == events.FinishCancelled {
		res.Err = errors.New("request cancelled")
	}

	ms := func(d time.Duration) *float64 { v := float64(d) / float64(time.Millisecond); return &v }
	ev := &events.RequestFinished{
		Model: e.cfg.Model, RequestID: RequestID(r.id), Finish: finish,
		PromptTokens: int64(len(r.prompt)), CachedPromptTokens: int64(r.cached),
		CompletionTokens: int64(r.generated),
		TotalMs:          *ms(t.Sub(r.arrived)),
	}
	if !r.admitted.IsZero() {
		ev.QueueMs = ms(r.admitted.Sub(r.arrived))
	}
	if !r.firstToken.IsZero() {
		ev.TTFTMs = ms(r.firstToken.Sub(r.arrived))
		if d := r.firstToken.Sub(r.admitted); d > 0 {
			v := float64(len(r.prompt)-r.cached) / d.Seconds()
			ev.PrefillTokensPerSecond = &v
		}
		if d := r.lastToken.Sub(r.firstToken); d > 0 && r.generated > 1 {
			v := float64(r.generated-1) / d.Seconds()
			ev.DecodeTokensPerSecond = &v
		}
	}
	// The event goes out before the stream ends, so whoever waited on the
	// stream finds it published.
	e.emit(events.TypeRequestFinished, t, ev)
	r.out.finish(res)
}

// RequestID is the id a request's responses carry and request.finished reports.
func RequestID(n uint64) string { return "sim-" + strconv.FormatUint(n, 10) }

// emitSamples publishes the scheduler, both caches and memory at t.
func (e *Engine) emitSamples(t time.Time) {
	var tps float64
	if d := t.Sub(e.stats.lastSample); d > 0 {
		tps = float64(e.stats.tokens) / d.Seconds()
	}
	e.stats.lastSample, e.stats.tokens = t, 0
	m := e.cfg.Model
	e.emit(events.TypeSchedulerSample, t, &events.SchedulerSample{
		Model: m, Active: len(e.running), Capacity: e.cfg.BatchCapacity,
		Queued: len(e.waiting), TokensPerSecond: tps,
	})
	kvCap := int64(e.kv.total) * e.cfg.pageBytes()
	e.emit(events.TypeCacheSample, t, &events.CacheSample{
		Model: m, Cache: events.CacheKV, Bytes: e.kvBytes(), CapacityBytes: &kvCap,
	})
	pCap, hits, misses := e.cfg.PrefixCacheBytes, e.prefix.hits, e.prefix.misses
	e.emit(events.TypeCacheSample, t, &events.CacheSample{
		Model: m, Cache: events.CachePrefix, Bytes: e.prefix.bytes(), CapacityBytes: &pCap,
		Hits: &hits, Misses: &misses,
	})
	e.emitMemory(t)
}

func (e *Engine) kvBytes() int64 { return int64(e.kv.used) * e.cfg.pageBytes() }

func (e *Engine) emitMemory(t time.Time) {
	e.emit(events.TypeModelMemory, t, &events.ModelMemory{
		Model: e.cfg.Model, WeightsBytes: e.cfg.WeightsBytes,
		KVBytes: e.kvBytes(), PrefixCacheBytes: e.prefix.bytes(),
	})
}
