package load

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mlx-bun/mlx-metrics/gpu/loadgen"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// point is one point of a sweep, one repeat.
type point struct {
	index, repeat int
	search        string
	// rate is an open loop's requests/s (0 for a closed loop); streams is
	// a closed loop's concurrency, or an open loop's cap (0: none).
	rate    float64
	streams int
}

func (p point) closed() bool { return p.rate == 0 }

// sender is what a point needs besides itself: the phase's settings.
type sender struct {
	client  *loadgen.Client
	model   string
	load    bench.Load
	wl      *workload
	nonce   string
	timeout func(promptTokens, maxTokens int) time.Duration
}

// recordBuffer is how many ended requests may wait for the writer.
const recordBuffer = 4096

// run measures p: it sends the point's requests, writes each one's record
// to w as it ends (NDJSON) and summarises them.
func (s *sender) run(ctx context.Context, p point, w io.Writer) (bench.LoadPoint, error) {
	sum := newSummary(p, s.load)
	records := make(chan bench.RequestRecord, recordBuffer)
	wrote := make(chan error, 1)
	go func() {
		bw := bufio.NewWriterSize(w, 64<<10)
		enc := json.NewEncoder(bw)
		var werr error
		for rec := range records {
			sum.add(rec)
			if werr == nil {
				werr = enc.Encode(rec)
			}
		}
		if werr == nil {
			werr = bw.Flush()
		}
		wrote <- werr
	}()
	rng := pointRNG(s.load.Seed, p.index, p.repeat)
	start := time.Now()
	if p.closed() {
		s.closedLoop(ctx, p, rng, start, records)
	} else {
		s.openLoop(ctx, p, rng, start, records)
	}
	close(records)
	if err := <-wrote; err != nil {
		return sum.point(), fmt.Errorf("write the requests of point %d: %w", p.index, err)
	}
	return sum.point(), ctx.Err()
}

// openLoop sends request i at its scheduled time whatever the server does
// with the earlier ones; a cap makes an arrival wait for a free slot.
func (s *sender) openLoop(ctx context.Context, p point, rng *rand.Rand, start time.Time, records chan<- bench.RequestRecord) {
	l := s.load
	arr := newArrivals(l.Arrival, p.rate, l.Burstiness, rng)
	var slots chan struct{}
	if p.streams > 0 {
		slots = make(chan struct{}, p.streams)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	var at, countedAt time.Duration // scheduled offsets
	for i := 0; ; i++ {
		if i == l.WarmupRequests {
			countedAt = at // a duration counts from the first counted request
		}
		if !s.more(i, at-countedAt) {
			return
		}
		if !waitUntil(ctx, timer, start.Add(at)) {
			return
		}
		var slot time.Duration
		if slots != nil {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			slot = time.Since(start)
		}
		it := s.wl.next(rng, fmt.Sprintf("%s-%d-%d-%d", s.nonce, p.index, p.repeat, i), i)
		scheduled := at
		wg.Go(func() {
			rec := s.send(ctx, it, start, i, i < l.WarmupRequests, scheduled, slot)
			if slots != nil {
				<-slots
			}
			records <- rec
		})
		at += arr.next()
	}
}

// pointRNG is the random source of a point's arrivals and lengths. The
// seed, point and repeat are mixed (splitmix64) into both words of PCG's
// state rather than set as the state's low bits: PCG promises nothing of
// states a few bits apart (the first points of one sweep drew gaps 19 %,
// 22 % and 22 % short under the old seeding; chance or not, mixed seeds
// are what PCG's authors ask for).
func pointRNG(seed uint64, index, repeat int) *rand.Rand {
	k := splitmix(seed) ^ splitmix(uint64(index)<<32|uint64(repeat))
	return rand.New(rand.NewPCG(splitmix(k), splitmix(k^0x6a09e667f3bcc909)))
}

// splitmix is splitmix64's finaliser: every input bit moves every output
// bit.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// spinFor is how long before a request's time the open loop stops
// sleeping and watches the clock: Go's timers fire up to about a
// millisecond late (the runtime's poller waits in whole milliseconds), and
// that lateness would be every request's lag.
const spinFor = 1500 * time.Microsecond

// waitUntil returns at t, or false when ctx ends first.
func waitUntil(ctx context.Context, timer *time.Timer, t time.Time) bool {
	if d := time.Until(t) - spinFor; d > 0 {
		timer.Reset(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return false
		}
	}
	for time.Now().Before(t) {
		runtime.Gosched()
	}
	return ctx.Err() == nil
}

// closedLoop keeps p.streams requests in flight: each stream sends its
// next request when its last one ends.
func (s *sender) closedLoop(ctx context.Context, p point, rng *rand.Rand, start time.Time, records chan<- bench.RequestRecord) {
	l := s.load
	var next atomic.Int64
	var countedAt atomic.Int64 // ns after start; set when the first counted request is taken
	countedAt.Store(-1)
	var mu sync.Mutex // rng and the workload's draws, in the order taken
	var wg sync.WaitGroup
	for range p.streams {
		wg.Go(func() {
			for ctx.Err() == nil {
				mu.Lock()
				i := int(next.Add(1) - 1)
				now := time.Since(start)
				if i == l.WarmupRequests {
					countedAt.Store(int64(now))
				}
				c := countedAt.Load()
				elapsed := time.Duration(0)
				if c >= 0 {
					elapsed = now - time.Duration(c)
				}
				if !s.more(i, elapsed) {
					mu.Unlock()
					return
				}
				it := s.wl.next(rng, fmt.Sprintf("%s-%d-%d-%d", s.nonce, p.index, p.repeat, i), i)
				mu.Unlock()
				records <- s.send(ctx, it, start, i, i < l.WarmupRequests, now, 0)
			}
		})
	}
	wg.Wait()
}

// more says whether request i is to be sent, the counted requests having
// been scheduled over elapsed so far.
func (s *sender) more(i int, elapsed time.Duration) bool {
	l := s.load
	if i < l.WarmupRequests {
		return true
	}
	if l.DurationMs > 0 {
		return elapsed < time.Duration(l.DurationMs)*time.Millisecond
	}
	return i < l.WarmupRequests+l.Requests
}

// send runs one request and makes its record; times are from start.
func (s *sender) send(ctx context.Context, it item, start time.Time, i int, warmup bool, scheduled, slot time.Duration) bench.RequestRecord {
	res, err := s.client.Do(ctx, loadgen.Request{
		Endpoint: s.load.Endpoint, Model: s.model, Prompt: it.prompt, MaxTokens: it.maxTokens,
		Timeout: s.timeout(it.promptTokens, it.maxTokens), ChunkTimes: true,
	})
	return record(res, err, start, i, warmup, scheduled, slot, it.maxTokens)
}

// record is one request's figures, by vLLM's definitions: TTFT from
// sending to the first chunk with text, ITL the gaps between chunks with
// text, TPOT (E2EL − TTFT)/(output tokens − 1), token counts from the
// server's usage.
func record(res loadgen.Result, err error, start time.Time, i int, warmup bool, scheduled, slot time.Duration, maxTokens int) bench.RequestRecord {
	rec := bench.RequestRecord{
		Index: i, Warmup: warmup, ScheduledMs: msOf(scheduled), SlotMs: msOf(slot),
		MaxTokens: maxTokens, Finish: res.Finish,
	}
	if !res.Start.IsZero() {
		rec.SentMs = msOf(res.Start.Sub(start))
	}
	if res.HasUsage {
		rec.PromptTokens, rec.OutputTokens = res.PromptTokens, res.CompletionTokens
	}
	if err != nil {
		rec.Error = oneLine(err.Error())
		return rec
	}
	rec.TTFTMs = msOf(res.TTFT())
	if d, ok := res.ClientShare(); ok {
		rec.ClientMs = msOf(d)
	}
	rec.E2ELMs = msOf(res.Total())
	if len(res.ChunkAt) > 1 {
		rec.ITLMs = make([]float64, len(res.ChunkAt)-1)
		for k := 1; k < len(res.ChunkAt); k++ {
			rec.ITLMs[k-1] = msOf(res.ChunkAt[k] - res.ChunkAt[k-1])
		}
	}
	if rec.OutputTokens > 1 {
		rec.TPOTMs = (rec.E2ELMs - rec.TTFTMs) / float64(rec.OutputTokens-1)
	}
	return rec
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// oneLine bounds an error's text for a record.
func oneLine(s string) string {
	const max = 300
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}
