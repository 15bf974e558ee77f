package runner

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/mlx-bun/mlx-metrics/gpu/loadgen"
	"github.com/mlx-bun/mlx-metrics/gpu/probe"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/duration"
	"github.com/mlx-bun/mlx-metrics/shared/plural"
)

// run is the state shared by a run's cells.
type run struct {
	o      Options
	logDir string
	gpu    *probe.GPU
	gpuErr error
	phases bench.Phases
}

// defaultReadyTimeout allows for a real model's load from disk.
const defaultReadyTimeout = 10 * time.Minute

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// measure starts the cell's server (or attaches to it), runs the phases
// and stops the server it started.
func (r *run) measure(ctx context.Context, i int, cell bench.Cell, res *bench.CellResult) {
	srv, ok := r.open(i, cell, res)
	if !ok {
		return
	}
	sampler := r.sampleMemory(srv)
	defer func() {
		srv.stop(r.o.StopGrace)
		sampler.stop(res)
	}()
	timeout := defaultReadyTimeout
	if srv.attached {
		timeout = attachReadyTimeout
	}
	if ms := cell.Server.ReadyTimeoutMs; ms > 0 {
		timeout = time.Duration(ms) * time.Millisecond
	}
	cold, err := srv.waitReady(ctx, timeout)
	if err != nil {
		if ctx.Err() != nil {
			res.Status, res.Note = bench.CellFailed, "cancelled mid-cell"
			return
		}
		if srv.attached {
			r.fail(res, "attach", err, "")
			return
		}
		// Stopped first, so the tail holds all it wrote (a server still
		// loading may not have written anything yet when the wait ended).
		srv.stop(r.o.StopGrace)
		r.fail(res, "cold start", err, srv.stderr.String())
		return
	}
	if srv.attached {
		fmt.Fprintln(r.o.Out, "ready (attached: no cold start to measure)")
	} else {
		v := ms(cold)
		res.ColdStartMs = &v
		fmt.Fprintf(r.o.Out, "ready after %s\n", duration.Ms(v))
	}

	m := &measurer{
		run: r, srv: srv, res: res, cell: i,
		client: loadgen.New(srv.baseURL, loadgen.Options{}),
		model:  cell.Model,
		nonce:  fmt.Sprintf("%s-%d", r.o.ID, requestGroup(r.o.Plan, i)),
	}
	if cell.Server.APIModel != "" {
		m.model = cell.Server.APIModel
	}
	defer m.client.Close()
	failed := false
	for _, ph := range m.phaseList() {
		if ctx.Err() != nil {
			break
		}
		if !m.phase(ctx, ph) {
			failed = true
			if srv.exitErr() != nil {
				break // the server is gone: nothing more to measure
			}
		}
	}
	if srv.exitErr() == nil {
		m.probe(ctx)
	}
	switch {
	case ctx.Err() != nil:
		res.Status, res.Note = bench.CellFailed, "cancelled mid-cell"
		return
	case failed:
		res.Status = bench.CellFailed
	default:
		res.Status = bench.CellMeasured
	}
	// Decode runs that were measured are checked also when a later phase
	// failed: the record says whether they can be trusted.
	checkSpread(res, r.phases.UnstableSpread, r.o.Strict)
}

// open starts the cell's server, or attaches to the running one the plan
// names; false when the cell failed already.
func (r *run) open(i int, cell bench.Cell, res *bench.CellResult) (*server, bool) {
	if cell.Server.Attach {
		grace := r.o.AttachGrace
		if grace <= 0 {
			grace = defaultAttachGrace
		}
		srv := attachServer(cell.Server, grace)
		res.Attached = true
		fmt.Fprintf(r.o.Out, "attached to %s (this run starts and stops nothing), checking %s\n", srv.baseURL, strings.Join(srv.readyURLs, " or "))
		return srv, true
	}
	logName := fmt.Sprintf("%02d-%s", i+1, unsafeName.ReplaceAllString(res.Key, "_"))
	srv, err := startServer(cell, r.o.Self, r.logDir, logName)
	if err != nil {
		r.fail(res, "start", err, "")
		return nil, false
	}
	fmt.Fprintf(r.o.Out, "started %v (pid %d), waiting for %s\n", srv.cmd.Args, srv.pgid(), srv.readyURLs[0])
	return srv, true
}

// fail records a cell that could not be measured at all.
func (r *run) fail(res *bench.CellResult, what string, err error, stderr string) {
	res.Status = bench.CellFailed
	res.Note = what + ": " + err.Error()
	res.Problems = append(res.Problems, res.Note)
	if stderr != "" {
		res.StderrTail = stderr
	}
}

// memorySampler follows the server's peak RSS (its whole process group)
// and, where NVML reads it, its peak GPU memory.
type memorySampler struct {
	done    chan struct{}
	stopped chan struct{}
	peakRSS int64
	peakGPU int64
	gpuNote string
	// peakWide and wideWhy: NVML could not attribute the GPU's memory to
	// processes of this PID namespace (probe.UnattributedError), so the
	// device-wide figure stands in, said so.
	peakWide int64
	wideWhy  string
}

func (r *run) sampleMemory(srv *server) *memorySampler {
	s := &memorySampler{done: make(chan struct{}), stopped: make(chan struct{})}
	if srv.attached {
		// Its processes are not the run's: no group to sum.
		s.gpuNote = "not measured: the server was attached, not started by the run"
		close(s.stopped)
		return s
	}
	if r.gpuErr != nil {
		s.gpuNote = "unavailable: " + r.gpuErr.Error()
	}
	sample := func() {
		rss, pids, err := probe.GroupRSS(srv.pgid())
		if err != nil {
			return
		}
		s.peakRSS = max(s.peakRSS, rss)
		if r.gpu != nil {
			s.addGPU(r.gpu.ProcessMemory(pids))
		}
	}
	go func() {
		defer close(s.stopped)
		t := time.NewTicker(r.o.SampleEvery)
		defer t.Stop()
		for {
			sample()
			select {
			case <-t.C:
			case <-s.done:
				return
			}
		}
	}()
	return s
}

// addGPU takes one reading of the group's GPU memory.
func (s *memorySampler) addGPU(bytes int64, err error) {
	var ua *probe.UnattributedError
	switch {
	case err == nil:
		s.peakGPU = max(s.peakGPU, bytes)
	case errors.As(err, &ua):
		s.peakWide = max(s.peakWide, ua.DeviceWide)
		s.wideWhy = ua.Reason
	default:
		s.gpuNote = "unavailable: " + err.Error()
	}
}

func (s *memorySampler) stop(res *bench.CellResult) {
	close(s.done)
	<-s.stopped
	s.fill(res)
}

// fill records the peaks: null GPU memory with the reason when it could not
// be read; the device-wide figure, labelled, when NVML could not tell the
// server's share of it; else the server's own.
func (s *memorySampler) fill(res *bench.CellResult) {
	res.PeakRSSBytes = s.peakRSS
	switch {
	case s.gpuNote != "":
		res.GPUMemoryNote = s.gpuNote
	case s.wideWhy != "":
		v := max(s.peakWide, s.peakGPU)
		res.PeakGPUMemoryBytes = &v
		res.GPUMemoryNote = deviceWidePrefix + s.wideWhy + "; the figure is the GPU's memory in use over its use when the run began, so it counts whatever else ran on the GPU"
	default:
		v := s.peakGPU
		res.PeakGPUMemoryBytes = &v
	}
}

// deviceWidePrefix opens the note of a device-wide peak GPU memory.
const deviceWidePrefix = "device-wide (not the server's own): "

// measurer runs one cell's phases against its server.
type measurer struct {
	run    *run
	srv    *server
	res    *bench.CellResult
	client *loadgen.Client
	model  string
	nonce  string // its request group's: nonceFor
	cell   int    // its place in the plan
	tally  *tally // the phase attempt's
}

// phase is one measurement: a name and the function producing its samples.
type phase struct {
	name string
	do   func(ctx context.Context, attempt int) ([]bench.Sample, error)
}

func (m *measurer) phaseList() []phase {
	do := map[string]func(ctx context.Context, attempt int) ([]bench.Sample, error){
		bench.PhaseDecode: m.decode, bench.PhaseColdTTFT: m.coldTTFT, bench.PhaseWarmTTFT: m.warmTTFT,
		bench.PhaseLongContext: m.longContext, bench.PhaseConcurrent: m.concurrent, bench.PhaseLoad: m.load,
	}
	var list []phase
	for _, name := range m.run.phases.Names() {
		list = append(list, phase{name, do[name]})
	}
	return list
}

// aliveTimeout bounds the wait, after a failed attempt, for the server to
// answer its readiness URL again or exit.
const aliveTimeout = 10 * time.Second

// phase runs ph, retrying once. It returns whether ph succeeded.
func (m *measurer) phase(ctx context.Context, ph phase) bool {
	for attempt := 1; attempt <= 2; attempt++ {
		fmt.Fprintf(m.run.o.Out, "phase %s (attempt %d)\n", ph.name, attempt)
		m.tally = &tally{}
		samples, err := ph.do(ctx, attempt)
		m.res.Samples = append(m.res.Samples, samples...)
		m.tell(ph.name)
		if err == nil {
			// Decode runs that spread past the plan's bound are measured
			// once more before the cell is called unstable: one busy moment
			// on the machine (or a server catching up) should not fail a
			// --strict run by itself. The last attempt's runs count.
			limit := m.run.phases.UnstableSpread
			if spread := decodeSpread(samples); ph.name == bench.PhaseDecode && attempt == 1 && limit > 0 && spread > limit {
				fmt.Fprintf(m.run.o.Out, "decode runs spread %.2fx (max/min), over %.2f: measuring them again\n", spread, limit)
				continue
			}
			return true
		}
		// A crashed server drops its connections before it is reaped, so
		// its exit may not show yet: wait until it answers its readiness
		// URL again (alive) or has exited, so a crash is told as a crash
		// and not as every later phase failing twice against nothing.
		_, _ = m.srv.waitReady(ctx, aliveTimeout)
		if ctx.Err() != nil {
			return false
		}
		m.res.StderrTail = m.srv.stderr.String()
		exit := m.srv.exitErr()
		verdict := "retrying"
		if attempt == 2 || exit != nil {
			verdict = "giving up"
		}
		m.res.Problems = append(m.res.Problems, fmt.Sprintf("phase %s failed (attempt %d, %s): %v", ph.name, attempt, verdict, err))
		if exit != nil {
			m.res.Problems = append(m.res.Problems, exit.Error())
			m.res.Note = appendNote(m.res.Note, exit.Error())
			return false
		}
		if attempt == 2 {
			m.res.Note = appendNote(m.res.Note, fmt.Sprintf("%s failed twice", ph.name))
		}
	}
	return false
}

func appendNote(note, s string) string {
	if note == "" {
		return s
	}
	return note + "; " + s
}

// timeout scales a request's deadline to its size: 30 s, plus 5 ms per
// prompt token (200 tok/s prefill) and 500 ms per generated token (2 tok/s),
// times the plan's requestTimeoutScale.
func (m *measurer) timeout(promptTokens, maxTokens int) time.Duration {
	d := 30*time.Second + time.Duration(promptTokens)*5*time.Millisecond + time.Duration(maxTokens)*500*time.Millisecond
	return time.Duration(float64(d) * m.run.phases.RequestTimeoutScale)
}

// nonceFor opens a prompt no cache has seen: one per phase, run and
// attempt (a retry gets its own), the same in every cell of the request
// group, so a head-to-head's arms are sent identical requests.
func (m *measurer) nonceFor(phase string, run, attempt int) string {
	return fmt.Sprintf("%s-%s-%d-a%d", m.nonce, phase, run, attempt)
}

// request runs one stream and turns it into a sample (observe).
func (m *measurer) request(ctx context.Context, phaseName string, run, attempt int, endpoint, prompt string, promptTokens, maxTokens int) (bench.Sample, loadgen.Result, error) {
	req := loadgen.Request{
		Endpoint: endpoint, Model: m.model, Prompt: prompt, MaxTokens: maxTokens,
		Timeout: m.timeout(promptTokens, maxTokens),
	}
	s := bench.Sample{Phase: phaseName, Run: run, Attempt: attempt, Endpoint: "/v1/" + endpoint, RequestHash: loadgen.Hash(req)}
	res, err := m.client.Do(ctx, req)
	err = m.observe(&s, res, err, promptTokens, maxTokens)
	return s, res, err
}

// Each phase's runs go on past one that failed (its sample keeps the
// error): the phase fails when none was measured, or at once when goOn
// says the next run is not worth sending.

func (m *measurer) decode(ctx context.Context, attempt int) ([]bench.Sample, error) {
	p := m.run.phases
	var out []bench.Sample
	for i := range p.DecodeRuns {
		s, res, err := m.request(ctx, bench.PhaseDecode, i+1, attempt, loadgen.Completions, loadgen.Prompt(32, m.nonceFor(bench.PhaseDecode, i+1, attempt)), 32, p.DecodeTokens)
		if err == nil {
			if s.DecodeTokensPerSecond = res.DecodeTokensPerSecond(); s.DecodeTokensPerSecond == 0 {
				err = fmt.Errorf("decode rate unmeasurable: %s in %s", plural.Count(res.CompletionTokens, "token", "tokens"), plural.Count(res.ContentChunks, "chunk", "chunks"))
				s.Error = err.Error()
				m.tally.fail(err)
			}
		}
		out = append(out, s)
		if err != nil {
			if !m.goOn(ctx, err) {
				return out, fmt.Errorf("decode run %d: %w", i+1, err)
			}
			continue
		}
		fmt.Fprintf(m.run.o.Out, "decode %d/%d: %.1f tok/s (%s)\n", i+1, p.DecodeRuns, s.DecodeTokensPerSecond, plural.Count(s.CompletionTokens, "token", "tokens"))
	}
	return out, measured(out, "decode")
}

func (m *measurer) coldTTFT(ctx context.Context, attempt int) ([]bench.Sample, error) {
	p := m.run.phases
	prompt := func(run int) string {
		return loadgen.Prompt(p.ColdPromptTokens, m.nonceFor(bench.PhaseColdTTFT, run, attempt))
	}
	return m.ttftRuns(ctx, bench.PhaseColdTTFT, "cold TTFT", p.ColdRuns, attempt, prompt, func(run int, s bench.Sample, res loadgen.Result) {
		fmt.Fprintf(m.run.o.Out, "cold TTFT %d/%d: %s, prefill %.0f tok/s (%s)\n", run, p.ColdRuns, duration.Ms(s.TTFTMs), s.PrefillTokensPerSecond, plural.Count(s.PromptTokens, "prompt token", "prompt tokens"))
	})
}

// warmTTFT sends one prompt once unrecorded (it fills the server's prompt
// cache) and then WarmRuns times: what a cache saves shows here.
func (m *measurer) warmTTFT(ctx context.Context, attempt int) ([]bench.Sample, error) {
	p := m.run.phases
	prompt := loadgen.Prompt(p.ColdPromptTokens, m.nonceFor(bench.PhaseWarmTTFT, 0, attempt))
	// The priming fills the cache whether or not its stream had usage.
	if _, res, err := m.request(ctx, bench.PhaseWarmTTFT, 0, attempt, loadgen.Completions, prompt, p.ColdPromptTokens, 8); err != nil && res.ContentChunks == 0 {
		return nil, fmt.Errorf("warm TTFT priming: %w", err)
	}
	m.tally = &tally{} // the priming is not one of the phase's runs
	same := func(int) string { return prompt }
	return m.ttftRuns(ctx, bench.PhaseWarmTTFT, "warm TTFT", p.WarmRuns, attempt, same, func(run int, s bench.Sample, res loadgen.Result) {
		cached := fmt.Sprintf("%d of %s cached", res.CachedTokens, plural.Count(s.PromptTokens, "prompt token", "prompt tokens"))
		if !res.CachedReported {
			cached = plural.Count(s.PromptTokens, "prompt token", "prompt tokens") + "; the server reports no cached count"
		}
		fmt.Fprintf(m.run.o.Out, "warm TTFT %d/%d: %s (%s)\n", run, p.WarmRuns, duration.Ms(s.TTFTMs), cached)
	})
}

// ttftRuns is the TTFT phases' loop: runs completions of prompt(run) (the
// plan's cold prompt size, 8 tokens out), each sample with its prefill
// rate, said by say when measured; a run that failed is kept with its
// error, and the phase goes on past it while goOn says so.
func (m *measurer) ttftRuns(ctx context.Context, phase, name string, runs, attempt int, prompt func(run int) string, say func(run int, s bench.Sample, res loadgen.Result)) ([]bench.Sample, error) {
	var out []bench.Sample
	for i := range runs {
		s, res, err := m.request(ctx, phase, i+1, attempt, loadgen.Completions, prompt(i+1), m.run.phases.ColdPromptTokens, 8)
		if err == nil {
			s.PrefillTokensPerSecond = res.PrefillTokensPerSecond()
		}
		out = append(out, s)
		if err != nil {
			if !m.goOn(ctx, err) {
				return out, fmt.Errorf("%s run %d: %w", name, i+1, err)
			}
			continue
		}
		say(i+1, s, res)
	}
	return out, measured(out, name)
}

func (m *measurer) longContext(ctx context.Context, attempt int) ([]bench.Sample, error) {
	p := m.run.phases
	s, res, err := m.request(ctx, bench.PhaseLongContext, 1, attempt, loadgen.ChatCompletions, loadgen.Prompt(p.LongContextTokens, m.nonceFor(bench.PhaseLongContext, 1, attempt)), p.LongContextTokens, p.LongDecodeTokens)
	if err != nil {
		return []bench.Sample{s}, fmt.Errorf("long context: %w", err)
	}
	s.PrefillTokensPerSecond = res.PrefillTokensPerSecond()
	s.DecodeTokensPerSecond = res.DecodeTokensPerSecond()
	fmt.Fprintf(m.run.o.Out, "long context: %s, TTFT %s, prefill %.0f tok/s, then decode %.1f tok/s\n", plural.Count(s.PromptTokens, "prompt token", "prompt tokens"), duration.Ms(s.TTFTMs), s.PrefillTokensPerSecond, s.DecodeTokensPerSecond)
	return []bench.Sample{s}, nil
}

// concurrent runs Concurrency streams at once; its one sample holds their
// completion tokens over the wall time from the first start to the last end.
func (m *measurer) concurrent(ctx context.Context, attempt int) ([]bench.Sample, error) {
	p := m.run.phases
	n := p.Concurrency
	results := make([]loadgen.Result, n)
	errs := make([]error, n)
	prompts := make([]string, n)
	for i := range prompts {
		prompts[i] = loadgen.Prompt(32, m.nonceFor(bench.PhaseConcurrent, i+1, attempt))
	}
	// A server without batching serves the streams one after another, so
	// each may wait for all the others.
	timeout := m.timeout(32*n, p.ConcurrentTokens*n)
	reqs := make([]loadgen.Request, n)
	for i := range reqs {
		reqs[i] = loadgen.Request{Endpoint: loadgen.ChatCompletions, Model: m.model, Prompt: prompts[i], MaxTokens: p.ConcurrentTokens, Timeout: timeout}
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i], errs[i] = m.client.Do(ctx, reqs[i]) })
	}
	wg.Wait()
	wall := time.Since(start)
	s := bench.Sample{Phase: bench.PhaseConcurrent, Run: 1, Attempt: attempt, Endpoint: "/v1/" + loadgen.ChatCompletions, TotalMs: ms(wall),
		RequestHash: loadgen.Hash(reqs...)}
	// The aggregate is over the streams with usage; one without counts
	// nothing (its tokens are not known), said in the sample's note.
	var failed, notes []string
	s.Stamped = true
	for i, res := range results {
		var one bench.Sample
		if err := m.observe(&one, res, errs[i], 32, p.ConcurrentTokens); err != nil {
			failed = append(failed, fmt.Sprintf("stream %d: %v", i+1, err))
			continue
		}
		if one.Note != "" {
			notes = append(notes, fmt.Sprintf("stream %d: %s", i+1, one.Note))
		}
		s.Stamped = s.Stamped && res.Stamped
		s.PromptTokens += res.PromptTokens
		s.CompletionTokens += res.CompletionTokens
		s.TTFTMs = max(s.TTFTMs, ms(res.TTFT()))
	}
	if len(failed) == n {
		s.Error, s.Stamped = strings.Join(failed, "; "), false
		return []bench.Sample{s}, fmt.Errorf("concurrent: %s", s.Error)
	}
	if len(failed) > 0 {
		notes = append([]string{fmt.Sprintf("the aggregate counts %d of %d streams (a lower bound): %s", n-len(failed), n, strings.Join(failed, "; "))}, notes...)
	}
	s.Note = strings.Join(notes, "; ")
	s.AggregateTokensPerSecond = float64(s.CompletionTokens) / wall.Seconds()
	fmt.Fprintf(m.run.o.Out, "concurrent x%d: %.1f tok/s aggregate (%s in %s)\n", n, s.AggregateTokensPerSecond, plural.Count(s.CompletionTokens, "token", "tokens"), duration.Ms(s.TotalMs))
	return []bench.Sample{s}, nil
}

// decodeSpread is the max/min of the decode rates of samples' measured
// decode runs (those of the phase's last attempt).
func decodeSpread(samples []bench.Sample) float64 {
	var rates []float64
	for _, s := range bench.PhaseSamples(samples, bench.PhaseDecode) {
		rates = append(rates, s.DecodeTokensPerSecond)
	}
	return bench.Spread(rates)
}

// checkSpread tags the cell unstable when its decode runs (those of the
// phase's last attempt) spread more than limit allows (max/min); strict
// makes a measured cell that is unstable a failed one.
func checkSpread(res *bench.CellResult, limit float64, strict bool) {
	if spread := decodeSpread(res.Samples); spread > limit {
		res.Unstable = true
		msg := fmt.Sprintf("unstable: decode runs spread %.2fx (max/min), over %.2f", spread, limit)
		res.Note = appendNote(res.Note, msg)
		res.Problems = append(res.Problems, msg)
		if strict && res.Status == bench.CellMeasured {
			res.Status = bench.CellFailed
			res.Note = appendNote(res.Note, "failed under --strict")
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
