// Package engine is the reference engine: a simulator of an LLM serving
// engine, not a model. It serves the OpenAI streaming API (completions and
// chat completions) from a continuous-batching scheduler with chunked
// prefill, a paged KV cache with a byte budget and a prefix cache, and its
// step times follow a stated cost model (see Config). It publishes the core
// serving events, so benchmarks and the live panel have something real to
// measure on a machine with no accelerator and no weights.
package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// Engine is one simulated model behind a batch scheduler.
type Engine struct {
	cfg   Config
	clock clock.Clock
	sink  func(events.Event)

	ready atomic.Bool
	seq   atomic.Uint64

	mu       sync.Mutex
	stopped  bool // Run has returned: Submit refuses
	incoming []*request
	wake     chan struct{} // cap 1: something arrived or was cancelled

	// Owned by the scheduler goroutine.
	waiting []*request
	running []*request
	kv      kvCache
	prefix  *prefixCache
	stats   sampleStats
	// lastAdmit is when the last request was admitted.
	lastAdmit time.Time
}

// sampleStats accumulates what the periodic samples report.
type sampleStats struct {
	busy       bool
	lastSample time.Time
	tokens     int64 // generated since lastSample
}

// Options configure an Engine beyond its model. The zero value is the
// defaults.
type Options struct {
	// Clock is the engine's time (clock.Real{} when nil). A test clock
	// that jumps to each deadline makes every figure exactly what the cost
	// model says.
	Clock clock.Clock
	// Sink receives every event the engine publishes (the events are
	// dropped when nil). It is called from the scheduler goroutine and
	// must not block.
	Sink func(events.Event)
}

// New builds an engine of the model cfg; Run loads the model and
// schedules.
func New(cfg Config, opts Options) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Sink == nil {
		opts.Sink = func(events.Event) {}
	}
	return &Engine{
		cfg:    cfg,
		clock:  opts.Clock,
		sink:   opts.Sink,
		wake:   make(chan struct{}, 1),
		kv:     kvCache{total: cfg.totalPages()},
		prefix: newPrefixCache(cfg.pageBytes(), cfg.PrefixCacheBytes),
	}, nil
}

// Config is the engine's configuration.
func (e *Engine) Config() Config { return e.cfg }

// Ready reports whether the model has loaded.
func (e *Engine) Ready() bool { return e.ready.Load() }

func (e *Engine) emit(t events.Type, at time.Time, payload any) {
	e.sink(events.Event{Type: t, At: at.UnixMilli(), Payload: payload})
}

// Run simulates the model load (LoadTime), then schedules until ctx ends.
// Requests submitted before the load finishes wait in the queue.
func (e *Engine) Run(ctx context.Context) error {
	start := e.clock.Now()
	e.emit(events.TypeModelLoad, start, &events.ModelLoad{Model: e.cfg.Model, Phase: events.PhaseStarted})
	if err := clock.SleepUntil(ctx, e.clock, start.Add(e.cfg.LoadTime)); err != nil {
		msg := "load interrupted: " + err.Error()
		e.emit(events.TypeModelLoad, e.clock.Now(), &events.ModelLoad{Model: e.cfg.Model, Phase: events.PhaseFailed, Error: msg})
		e.failAll(ErrStopped)
		return nil
	}
	loaded := e.clock.Now()
	ms := float64(loaded.Sub(start)) / float64(time.Millisecond)
	wb := e.cfg.WeightsBytes
	e.ready.Store(true) // before the event: whoever sees it finds the engine ready
	e.emit(events.TypeModelLoad, loaded, &events.ModelLoad{Model: e.cfg.Model, Phase: events.PhaseFinished, Ms: &ms, WeightsBytes: &wb})
	e.emitMemory(loaded)
	err := e.schedule(ctx)
	e.failAll(ErrStopped)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}

// ErrStopped is Submit's answer once the engine has stopped.
var ErrStopped = errors.New("the engine has stopped")

// ErrRejected wraps why a request can never be served (it is the client's
// fault: a 400).
var ErrRejected = errors.New("request rejected")

// fits is nil when a request of prompt tokens asking for maxTokens more
// fits this engine, else why Submit refuses it (ErrRejected, wrapped).
func (e *Engine) fits(prompt, maxTokens int) error {
	if prompt == 0 {
		return fmt.Errorf("%w: the prompt is empty", ErrRejected)
	}
	if maxTokens < 1 {
		return fmt.Errorf("%w: max_tokens must be >= 1, got %d", ErrRejected, maxTokens)
	}
	// Compared without adding: a max_tokens near the int's bound would
	// overflow the sum and pass.
	if maxTokens > e.cfg.MaxContext-prompt {
		return fmt.Errorf("%w: this model's maximum context length is %d tokens, but the request needs more (%d in the prompt, %d to generate)",
			ErrRejected, e.cfg.MaxContext, prompt, maxTokens)
	}
	if need := e.cfg.pagesFor(prompt + maxTokens); need > e.kv.total {
		return fmt.Errorf("%w: the request needs %d KV pages and the KV budget holds %d", ErrRejected, need, e.kv.total)
	}
	return nil
}

// Submit queues a generation of maxTokens tokens after prompt. The stream
// ends when all are generated, or when ctx ends (the request is cancelled).
func (e *Engine) Submit(ctx context.Context, prompt []uint64, maxTokens int) (*Stream, error) {
	if err := e.fits(len(prompt), maxTokens); err != nil {
		return nil, err
	}
	n := e.seq.Add(1)
	r := &request{
		id: n, seed: promptSeed(prompt), prompt: prompt, maxTokens: maxTokens, ctx: ctx,
		arrived: e.clock.Now(),
		out:     newStream(n),
	}
	// The scheduler drops a cancelled request at its next step; this wakes
	// it for that when it waits.
	stop := context.AfterFunc(ctx, e.signal)
	r.out.release = func() { stop() }
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		stop()
		return nil, ErrStopped
	}
	e.incoming = append(e.incoming, r)
	e.mu.Unlock()
	e.signal()
	return r.out, nil
}

func (e *Engine) signal() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func (e *Engine) failAll(err error) {
	e.mu.Lock()
	e.stopped = true
	in := e.incoming
	e.incoming = nil
	e.mu.Unlock()
	for _, r := range append(append(in, e.waiting...), e.running...) {
		r.out.finish(Result{Finish: events.FinishError, Err: err})
	}
	e.waiting, e.running = nil, nil
}
