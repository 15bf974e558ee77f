package engine

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// jumpClock jumps to every deadline at once: the scheduler runs as fast as
// the CPU allows while its figures are exactly the cost model's.
type jumpClock struct{ *clock.Fake }

func newJumpClock() *jumpClock { return &jumpClock{clock.NewFake(time.Unix(1_764_000_000, 0))} }

func (c *jumpClock) Sleep(ctx context.Context, d time.Duration) error {
	if d > 0 {
		c.Advance(d)
	}
	return ctx.Err()
}

// recorder is an event sink.
type recorder struct {
	mu      sync.Mutex
	changed *sync.Cond
	events  []events.Event
}

func newRecorder() *recorder {
	r := &recorder{}
	r.changed = sync.NewCond(&r.mu)
	return r
}

func (r *recorder) sink(ev events.Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	r.changed.Broadcast()
}

// waitFor blocks until the events so far satisfy ok.
func (r *recorder) waitFor(ok func([]events.Event) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for !ok(r.events) {
		r.changed.Wait()
	}
}

// gateClock is a jumpClock that takes each step only when the test sends
// on gate, so a test can act between steps.
type gateClock struct {
	jumpClock
	gate chan struct{}
}

func (c *gateClock) Sleep(ctx context.Context, d time.Duration) error {
	if d > 0 {
		select {
		case <-c.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return c.jumpClock.Sleep(ctx, d)
}

func (r *recorder) ofType(t events.Type) []events.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []events.Event
	for _, ev := range r.events {
		if ev.Type == t {
			out = append(out, ev)
		}
	}
	return out
}

func (r *recorder) finished(id uint64) *events.RequestFinished {
	for _, ev := range r.ofType(events.TypeRequestFinished) {
		if p := ev.Payload.(*events.RequestFinished); p.RequestID == RequestID(id) {
			return p
		}
	}
	return nil
}

func testConfig() Config {
	c := DefaultConfig()
	c.LoadTime = 0
	return c
}

func prompt(n int, salt uint64) []uint64 {
	p := make([]uint64, n)
	for i := range p {
		p[i] = salt<<32 | uint64(i)
	}
	return p
}

// drain reads s to its end.
func drain(t *testing.T, s *Stream) (int, *Result) {
	t.Helper()
	n := 0
	for {
		toks, res, err := s.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n += len(toks)
		if res != nil {
			return n, res
		}
	}
}

func start(t *testing.T, cfg Config) (*Engine, *recorder, context.CancelFunc) {
	t.Helper()
	rec := newRecorder()
	e, err := New(cfg, Options{Clock: newJumpClock(), Sink: rec.sink})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return e, rec, cancel
}

func near(got, want float64) bool { return math.Abs(got-want) <= 1e-6*math.Max(1, math.Abs(want)) }

func TestCostModelLoneRequest(t *testing.T) {
	tests := []struct {
		name                    string
		edit                    func(*Config)
		promptTokens, maxTokens int
		ttftMs, decodeTPS       float64
		totalMs                 float64
	}{
		{"1k prompt, 192 tokens", func(*Config) {}, 1024, 192, 256, 50, 256 + 191*20},
		{"16k prompt chunked", func(*Config) {}, 16384, 64, 4096, 50, 4096 + 63*20},
		{"one token", func(*Config) {}, 10, 1, 2.5, 0, 2.5},
		{"fast rates", func(c *Config) { c.DecodeRate = 2000; c.PrefillRate = 100000 }, 1000, 101, 10, 2000, 10 + 100*0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			tt.edit(&cfg)
			e, rec, _ := start(t, cfg)
			s, err := e.Submit(context.Background(), prompt(tt.promptTokens, 1), tt.maxTokens)
			if err != nil {
				t.Fatal(err)
			}
			n, res := drain(t, s)
			if n != tt.maxTokens || res.CompletionTokens != tt.maxTokens || res.Finish != events.FinishLength {
				t.Fatalf("got %d tokens, result %+v", n, res)
			}
			f := rec.finished(s.ID)
			if f == nil {
				t.Fatal("no request.finished")
			}
			if !near(*f.TTFTMs, tt.ttftMs) || !near(f.TotalMs, tt.totalMs) || *f.QueueMs != 0 {
				t.Errorf("ttft %v total %v queue %v, want %v %v 0", *f.TTFTMs, f.TotalMs, *f.QueueMs, tt.ttftMs, tt.totalMs)
			}
			if !near(*f.PrefillTokensPerSecond, cfg.PrefillRate) {
				t.Errorf("prefill %v tok/s, want %v", *f.PrefillTokensPerSecond, cfg.PrefillRate)
			}
			if tt.decodeTPS == 0 {
				if f.DecodeTokensPerSecond != nil {
					t.Errorf("decode rate %v for one token, want null", *f.DecodeTokensPerSecond)
				}
			} else if !near(*f.DecodeTokensPerSecond, tt.decodeTPS) {
				t.Errorf("decode %v tok/s, want %v", *f.DecodeTokensPerSecond, tt.decodeTPS)
			}
		})
	}
}

func TestPrefixCache(t *testing.T) {
	tests := []struct {
		name       string
		cacheBytes int64
		wantCached int64
		wantTTFT   float64
	}{
		{"enabled: all but the last token cached", 1 << 30, 1023, 0.25},
		{"disabled", 0, 0, 256},
		{"too small for the prompt's blocks", 16 * (128 << 10) * 8, 0, 256},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.PrefixCacheBytes = tt.cacheBytes
			e, rec, _ := start(t, cfg)
			var second *Stream
			for i := range 2 {
				s, err := e.Submit(context.Background(), prompt(1024, 7), 4)
				if err != nil {
					t.Fatal(err)
				}
				drain(t, s)
				if i == 1 {
					second = s
				}
			}
			f := rec.finished(second.ID)
			if f.CachedPromptTokens != tt.wantCached || !near(*f.TTFTMs, tt.wantTTFT) {
				t.Errorf("cached %d ttft %v, want %d %v", f.CachedPromptTokens, *f.TTFTMs, tt.wantCached, tt.wantTTFT)
			}
		})
	}
}

// submitAll queues every request before the scheduler starts, so they are
// admitted together.
func submitAll(t *testing.T, cfg Config, n, promptTokens, maxTokens int) (*recorder, []*Stream) {
	t.Helper()
	rec := newRecorder()
	e, err := New(cfg, Options{Clock: newJumpClock(), Sink: rec.sink})
	if err != nil {
		t.Fatal(err)
	}
	var streams []*Stream
	for i := range n {
		s, err := e.Submit(context.Background(), prompt(promptTokens, uint64(i+100)), maxTokens)
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	for _, s := range streams {
		drain(t, s)
	}
	return rec, streams
}

func TestBatching(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(*Config)
		n         int
		wantQueue []float64 // per request, ms
		wantTPS   []float64 // decode tokens/s per request
	}{
		// 4 rows of 100-token prompts: one 400-token prefill step (100 ms),
		// then 1.15/50 s per decode step.
		{"4 rows decode together", func(*Config) {}, 4, []float64{0, 0, 0, 0}, []float64{50 / 1.15, 50 / 1.15, 50 / 1.15, 50 / 1.15}},
		// Capacity 1: the second waits for the first's prefill (25 ms) and
		// 9 decode steps (180 ms).
		{"capacity 1 queues", func(c *Config) { c.BatchCapacity = 1 }, 2, []float64{0, 205}, []float64{50, 50}},
		// A KV budget of 8 pages (100+10 tokens need 7) admits one at a time.
		{"KV budget queues", func(c *Config) { c.KVBudgetBytes = 8 * c.pageBytes() }, 2, []float64{0, 205}, []float64{50, 50}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			tt.edit(&cfg)
			rec, streams := submitAll(t, cfg, tt.n, 100, 10)
			for i, s := range streams {
				f := rec.finished(s.ID)
				if !near(*f.QueueMs, tt.wantQueue[i]) || !near(*f.DecodeTokensPerSecond, tt.wantTPS[i]) {
					t.Errorf("request %d: queue %v ms decode %v tok/s, want %v %v", i, *f.QueueMs, *f.DecodeTokensPerSecond, tt.wantQueue[i], tt.wantTPS[i])
				}
			}
		})
	}
}

func TestSubmitRejects(t *testing.T) {
	cfg := testConfig()
	cfg.MaxContext = 100
	cfg.KVBudgetBytes = 4 * cfg.pageBytes() // 64 tokens
	e, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		prompt int
		max    int
	}{
		{"empty prompt", 0, 1},
		{"zero max tokens", 5, 0},
		{"over max context", 90, 20},
		{"over the KV budget", 60, 10},
	}
	for _, tt := range tests {
		if _, err := e.Submit(context.Background(), prompt(tt.prompt, 1), tt.max); err == nil {
			t.Errorf("%s: Submit accepted it", tt.name)
		}
	}
}

func TestCancelFreesRow(t *testing.T) {
	cfg := testConfig()
	cfg.BatchCapacity = 1
	rec := newRecorder()
	clock := &gateClock{jumpClock: *newJumpClock(), gate: make(chan struct{})}
	e, err := New(cfg, Options{Clock: clock, Sink: rec.sink})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(runCtx); close(done) }()
	defer func() { stop(); <-done }()

	ctx, cancel := context.WithCancel(context.Background())
	s, err := e.Submit(ctx, prompt(10, 1), 1_000)
	if err != nil {
		t.Fatal(err)
	}
	// Also one that waits in the queue behind it, cancelled while waiting.
	waitCtx, cancelWaiting := context.WithCancel(context.Background())
	waiter, err := e.Submit(waitCtx, prompt(10, 3), 5)
	if err != nil {
		t.Fatal(err)
	}
	clock.gate <- struct{}{} // prefill step: the first token
	if toks, _, err := s.Next(context.Background()); err != nil || len(toks) != 1 {
		t.Fatalf("first step: %d tokens, %v", len(toks), err)
	}
	cancel()
	cancelWaiting()
	var res *Result
	generated := 1
	for res == nil { // step until the scheduler sees the cancellation
		clock.gate <- struct{}{}
		var toks []Token
		toks, res, err = s.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		generated += len(toks)
	}
	if res.Finish != events.FinishCancelled || generated >= 1_000 {
		t.Fatalf("finish %q after %d tokens, want cancelled early", res.Finish, generated)
	}
	close(clock.gate) // from here on, steps run freely
	if _, wres := drain(t, waiter); wres.Finish != events.FinishCancelled {
		t.Fatalf("queued request ended %+v, want cancelled", wres)
	}
	// The row is free again: a new request completes.
	s2, err := e.Submit(context.Background(), prompt(10, 2), 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, res := drain(t, s2); res.Finish != events.FinishLength {
		t.Fatalf("second request %+v", res)
	}
	for _, id := range []uint64{s.ID, waiter.ID} {
		if f := rec.finished(id); f == nil || f.Finish != events.FinishCancelled {
			t.Errorf("request.finished for cancelled request %d: %+v", id, f)
		}
	}
}

func TestSamplesWhileBusy(t *testing.T) {
	cfg := testConfig()
	e, rec, _ := start(t, cfg)
	// 1 token of prefill then 149 decode steps of 20 ms: busy ~3 s.
	s, err := e.Submit(context.Background(), prompt(4, 1), 150)
	if err != nil {
		t.Fatal(err)
	}
	drain(t, s)
	// Wait for the idle sample set: model.memory closes each set.
	rec.waitFor(func(evs []events.Event) bool {
		idle := false
		for _, ev := range evs {
			if p, ok := ev.Payload.(*events.SchedulerSample); ok && p.Active == 0 {
				idle = true
			} else if idle && ev.Type == events.TypeModelMemory {
				return true
			}
		}
		return false
	})
	samples := rec.ofType(events.TypeSchedulerSample)
	if len(samples) < 3 {
		t.Fatalf("%d scheduler samples over ~3 s busy, want >= 3", len(samples))
	}
	first := samples[0].Payload.(*events.SchedulerSample)
	if first.Active != 1 || first.Capacity != cfg.BatchCapacity || !near(first.TokensPerSecond, 51/1.001) {
		// 1 ms of prefill yields the first token, then one every 20 ms:
		// 51 tokens by the first sample at 1.001 s.
		t.Errorf("first sample %+v, want 1 active at 51/1.001 tok/s", first)
	}
	caches := rec.ofType(events.TypeCacheSample)
	if len(caches) != 2*len(samples) {
		t.Errorf("%d cache samples for %d scheduler samples, want kv+prefix each time", len(caches), len(samples))
	}
	if len(rec.ofType(events.TypeModelLoad)) != 2 || len(rec.ofType(events.TypeModelMemory)) == 0 {
		t.Error("want model.load started+finished and model.memory")
	}
	// Every event the engine publishes passes the backend's validation.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, ev := range rec.events {
		b, err := ev.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := events.Parse(b); err != nil {
			t.Errorf("%s does not parse: %v", b, err)
		}
	}
}

// lateClock takes each step when the test says (gate) and wakes 5 ms late,
// as a busy machine does: the step chain lags wall time and catches up.
type lateClock struct{ gateClock }

func (c *lateClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err() // nothing to wait for (a load of 0 ms)
	}
	return c.gateClock.Sleep(ctx, d+5*time.Millisecond)
}

// Whatever the lag, a request's timings stay causal: no first token before
// its arrival, and every event passes the backend's validation.
func TestLagKeepsTimingsCausal(t *testing.T) {
	cfg := testConfig()
	cfg.DecodeRate = 1000 // 1 ms steps, shorter than the lag
	rec := newRecorder()
	clock := &lateClock{gateClock{jumpClock: *newJumpClock(), gate: make(chan struct{})}}
	e, err := New(cfg, Options{Clock: clock, Sink: rec.sink})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	long, err := e.Submit(context.Background(), prompt(8, 1), 20)
	if err != nil {
		t.Fatal(err)
	}
	var late []*Stream
	for i := range 3 { // arrivals while the chain lags 5 ms
		clock.gate <- struct{}{}
		if _, _, err := long.Next(context.Background()); err != nil {
			t.Fatal(err)
		}
		s, err := e.Submit(context.Background(), prompt(4, uint64(i+10)), 3)
		if err != nil {
			t.Fatal(err)
		}
		late = append(late, s)
	}
	close(clock.gate)
	for _, s := range append(late, long) {
		drain(t, s)
	}
	for _, ev := range rec.ofType(events.TypeRequestFinished) {
		f := ev.Payload.(*events.RequestFinished)
		if *f.TTFTMs < *f.QueueMs || *f.QueueMs < 0 {
			t.Errorf("%s: ttft %v ms before queue %v ms", f.RequestID, *f.TTFTMs, *f.QueueMs)
		}
		b, _ := ev.MarshalJSON()
		if _, err := events.Parse(b); err != nil {
			t.Errorf("%s: %v", b, err)
		}
	}
}

func TestSubmitAfterStop(t *testing.T) {
	e, err := New(testConfig(), Options{Clock: newJumpClock()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	queued, err := e.Submit(context.Background(), prompt(4, 1), 2)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	e.Run(ctx) // returns at once: stopped during the load
	if _, res := drain(t, queued); res.Err == nil || res.Finish != events.FinishError {
		t.Errorf("a request queued at stop ended %+v, want an error", res)
	}
	if _, err := e.Submit(context.Background(), prompt(4, 2), 2); err != ErrStopped {
		t.Errorf("Submit after stop = %v, want ErrStopped", err)
	}
}

// A request that arrives after the scheduler read the time for its
// admission round is admitted as it arrived: its queue time is 0, never
// negative (the scheduler reads now, then takes the arrivals).
func TestAdmittedNotBeforeArrival(t *testing.T) {
	rec := newRecorder()
	c := clock.NewFake(time.UnixMilli(1_764_690_000_000))
	e, err := New(testConfig(), Options{Clock: c, Sink: rec.sink})
	if err != nil {
		t.Fatal(err)
	}
	e.ready.Store(true)
	roundAt := c.Now()
	c.Advance(80 * time.Millisecond) // the request comes in after the round read the time
	s, err := e.Submit(context.Background(), prompt(4, 1), 1)
	if err != nil {
		t.Fatal(err)
	}
	e.admit(roundAt)
	if len(e.running) != 1 {
		t.Fatalf("%d running, want the request admitted", len(e.running))
	}
	r := e.running[0]
	if !r.admitted.Equal(r.arrived) {
		t.Errorf("admitted %v after the round, arrived %v: want admitted as it arrived", r.admitted.Sub(roundAt), r.arrived.Sub(roundAt))
	}
	e.finish(r, events.FinishStop, c.Now())
	s.release()
	for _, ev := range rec.ofType(events.TypeRequestFinished) {
		if q := *ev.Payload.(*events.RequestFinished).QueueMs; q != 0 {
			t.Errorf("queue %v ms, want 0", q)
		}
	}
}
