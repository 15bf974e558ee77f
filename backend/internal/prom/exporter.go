package prom

import (
	"sync"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/mlx-bun/mlx-metrics/backend/internal/printable"
	"github.com/mlx-bun/mlx-metrics/backend/internal/store"
	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// MaxModels bounds the model label's values, as the live store bounds the
// models it tracks, so that a producer inventing model names cannot grow
// the registry, and every scrape, without bound.
const MaxModels = store.DefaultMaxModels

// OtherModels is the model label of a new model when MaxModels labels are
// in use and none can make room (every one is a loaded model that is
// resident or loading again). Its requests, tokens, loads and unloads are
// counted under it, so sums over models stay right; its gauges and
// prefix-cache counters are dropped, since a gauge shared by many models,
// or totals told apart by nothing, would mean nothing.
const OtherModels = "(other models)"

// Exporter reduces serving events to Prometheus metrics. It is a bus
// subscriber (Observe) and a route handler (Handle). Its registry is
// private, so nothing registered elsewhere in the process leaks into it.
type Exporter struct {
	reg  *prometheus.Registry // the mlx_ families (what OTLP pushes)
	vreg *prometheus.Registry // the vllm: families
	// preg is this process's own (process_*: CPU, memory, file
	// descriptors, start time), served whatever Names says, as vLLM's API
	// server serves its own.
	preg  *prometheus.Registry
	m     *metrics
	v     *vllmMetrics
	names Names
	max   int // MaxModels; smaller in tests
	// expose serves the exposition, at most maxExpositions at once across
	// every route that serves it.
	expose fiber.Handler

	// mu serialises Observe, so that a label is never evicted between
	// being chosen and being written to.
	mu sync.Mutex
	// models are the model label values in use, at most max.
	models map[string]*labelState
	seq    uint64 // counts the events that named a model
	// prefix remembers each model's last prefix-cache totals: cache.sample
	// carries running totals since the model loaded, and counters need the
	// increase, including across a reload that restarts the totals at 0.
	prefix map[string]prefixTotals
}

// labelState is what the eviction rule needs to know of a model label.
type labelState struct {
	seen   uint64 // the exporter's seq when an event last named it
	loaded bool   // it finished a load: a model the host really served
	live   bool   // resident or loading now
}

type prefixTotals struct{ hits, queries float64 }

// Options configure an Exporter. The zero value is the defaults.
type Options struct {
	// Names are the families the exposition serves (NamesBoth when empty).
	Names Names
}

// New returns an exporter with every metric registered and no series yet.
func New(opts Options) *Exporter { return newExporter(MaxModels, opts) }

func newExporter(maxModels int, opts Options) *Exporter {
	if opts.Names == "" {
		opts.Names = NamesBoth
	}
	reg, vreg, preg := prometheus.NewRegistry(), prometheus.NewRegistry(), prometheus.NewRegistry()
	preg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	e := &Exporter{reg: reg, vreg: vreg, preg: preg, m: newMetrics(reg), v: newVLLMMetrics(vreg), names: opts.Names,
		max: maxModels, models: map[string]*labelState{}, prefix: map[string]prefixTotals{}}
	h := fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(e.Gatherer(), promhttp.HandlerOpts{
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true, // negotiated: plain text unless the scraper asks
	}))
	e.expose = bounded(h, make(chan struct{}, maxExpositions), slotWait)
	return e
}

// Registry is the registry of the module's own (mlx_) families, which OTLP
// pushes.
func (e *Exporter) Registry() *prometheus.Registry { return e.reg }

// Gatherer is what the exposition serves: the families Names asks for,
// and the process's own.
func (e *Exporter) Gatherer() prometheus.Gatherer {
	switch e.names {
	case NamesMLX:
		return prometheus.Gatherers{e.reg, e.preg}
	case NamesVLLM:
		return prometheus.Gatherers{e.vreg, e.preg}
	}
	return prometheus.Gatherers{e.reg, e.vreg, e.preg}
}

// Handle serves the exposition: GET /api/metrics/prometheus, and GET
// /metrics to whatever the panel's page passes on there (a scraper, not a
// browser).
func (e *Exporter) Handle(c *fiber.Ctx) error { return e.expose(c) }

// Observe folds one event into the metrics. Types it does not export are
// ignored. It is safe for concurrent use.
func (e *Exporter) Observe(ev events.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch p := ev.Payload.(type) {
	case *events.SchedulerSample:
		if model, ok := e.model(p.Model); ok {
			e.serving(model)
			e.m.running.WithLabelValues(model).Set(float64(p.Active))
			e.m.waiting.WithLabelValues(model).Set(float64(p.Queued))
			e.v.scheduler(model, p)
			e.m.capacity.WithLabelValues(model).Set(float64(p.Capacity))
			e.m.tokensPerSecond.WithLabelValues(model).Set(p.TokensPerSecond)
		}
	case *events.CacheSample:
		if model, ok := e.model(p.Model); ok {
			e.observeCache(model, p)
		}
	case *events.RequestFinished:
		model, _ := e.model(p.Model)
		e.observeRequest(model, p)
		e.v.request(model, p)
	case *events.ModelMemory:
		if model, ok := e.model(p.Model); ok {
			e.m.weights.WithLabelValues(model).Set(float64(p.WeightsBytes))
			e.m.kvBytes.WithLabelValues(model).Set(float64(p.KVBytes))
			e.m.prefixBytes.WithLabelValues(model).Set(float64(p.PrefixCacheBytes))
		}
	case *events.ModelLoad:
		model, ok := e.model(p.Model)
		e.observeLoad(model, ok, p)
	case *events.ModelUnload:
		model, ok := e.model(p.Model)
		e.m.unloads.WithLabelValues(model, LabelValue(p.Reason)).Inc()
		if !ok {
			return
		}
		e.models[model].live = false
		e.m.resident.WithLabelValues(model).Set(0)
		e.v.awake(model, false)
		// An unloaded model has no batch and holds no memory; leaving its
		// last values would report a ghost.
		for _, g := range []*prometheus.GaugeVec{e.m.running, e.m.waiting, e.m.capacity,
			e.m.tokensPerSecond, e.m.kvUsage, e.m.weights, e.m.kvBytes, e.m.prefixBytes} {
			g.DeleteLabelValues(model)
		}
		e.m.cacheBytes.DeletePartialMatch(prometheus.Labels{modelLabel: model})
		e.m.cacheCapacity.DeletePartialMatch(prometheus.Labels{modelLabel: model})
		e.v.unloaded(model)
		// Its prefix totals end here; the next load's start again at 0, and
		// all of its first sample is new, even when it exceeds these.
		delete(e.prefix, model)
	}
}

// serving marks a model whose scheduler reports resident and awake, as the
// live store lists a model seen serving (a host that loaded it before this
// backend started sent no load).
func (e *Exporter) serving(model string) {
	if st := e.models[model]; !st.live {
		st.live = true
		e.m.resident.WithLabelValues(model).Set(1)
		e.v.awake(model, true)
	}
}

// model is the label value for name, with e.mu held: name itself, made safe
// to export, while it is in use or can be (ok), else OtherModels. A new name
// past the bound takes the place of an idle label (evictIdle). An empty
// name is no model (a request no model accepted): its counters go under the
// empty label, and it has no gauges.
func (e *Exporter) model(name string) (label string, ok bool) {
	if name == "" {
		return "", false
	}
	label = LabelValue(name)
	e.seq++
	if st, ok := e.models[label]; ok {
		st.seen = e.seq
		return label, true
	}
	if len(e.models) >= e.max && !e.evictIdle() {
		return OtherModels, false
	}
	e.models[label] = &labelState{seen: e.seq}
	// Every finished_reason and the errors at 0 from a model's first
	// sight, as vLLM creates them at its start: a success rate or an
	// errors column reads 0, not "no data", until the first of each.
	for _, r := range []string{reasonStop, reasonLength, reasonAbort} {
		e.m.success.WithLabelValues(label, r)
	}
	e.m.errors.WithLabelValues(label)
	e.v.created(label)
	return label, true
}

// evictIdle makes room for a new label by deleting every series of one that
// holds nothing, by the live store's rule (store.IdleTier): the least recently named model
// that never finished a load (a name a producer may have invented, or a load
// that never finished or failed), or failing that the least recently named
// loaded one that is unloaded or failed. A loaded model that is resident or
// loading again is never evicted. It reports whether one was. A model that
// comes back after its eviction starts its counters again, which Prometheus
// reads as a reset.
func (e *Exporter) evictIdle() bool {
	victim, victimTier := "", 0
	var victimSeen uint64
	for label, st := range e.models {
		tier := store.IdleTier(st.loaded, st.live)
		if tier == 0 {
			continue
		}
		if tier > victimTier || tier == victimTier && st.seen < victimSeen {
			victim, victimTier, victimSeen = label, tier, st.seen
		}
	}
	if victimTier == 0 {
		return false
	}
	for _, v := range e.m.all {
		v.DeletePartialMatch(prometheus.Labels{modelLabel: victim})
	}
	e.v.deleteModel(victim)
	delete(e.models, victim)
	delete(e.prefix, victim)
	return true
}

// LabelValue makes s safe as a label value: client_golang refuses invalid
// UTF-8 (with a panic), and the exposition format passes control characters
// such as NUL through raw, so both become U+FFFD; s is cut to at most
// events.MaxModelName bytes (printable.Cut).
func LabelValue(s string) string { return printable.Cut(s, events.MaxModelName) }

func (e *Exporter) observeCache(model string, p *events.CacheSample) {
	cache := LabelValue(string(p.Cache))
	// Engines scraped over their /metrics report a ratio and no bytes;
	// a 0 here would claim an empty cache.
	if p.UsageRatio == nil || p.Bytes > 0 {
		e.m.cacheBytes.WithLabelValues(model, cache).Set(float64(p.Bytes))
	}
	if p.CapacityBytes != nil {
		e.m.cacheCapacity.WithLabelValues(model, cache).Set(float64(*p.CapacityBytes))
	}
	if p.Cache == events.CacheKV {
		usage := -1.0
		switch {
		case p.UsageRatio != nil:
			usage = *p.UsageRatio
		case p.CapacityBytes != nil && *p.CapacityBytes > 0:
			usage = float64(p.Bytes) / float64(*p.CapacityBytes)
		}
		if usage >= 0 {
			e.m.kvUsage.WithLabelValues(model).Set(usage)
			e.v.kvUsage.WithLabelValues(model).Set(usage)
		}
	}
	if p.Cache != events.CachePrefix || p.Hits == nil || p.Misses == nil || *p.Hits < 0 || *p.Misses < 0 {
		return
	}
	// In float64: hits + misses of two large int64 totals would overflow.
	now := prefixTotals{hits: float64(*p.Hits), queries: float64(*p.Hits) + float64(*p.Misses)}
	last, seen := e.prefix[model]
	e.prefix[model] = now
	if seen && now.hits >= last.hits && now.queries >= last.queries {
		now.hits -= last.hits
		now.queries -= last.queries
	} // else the totals restarted (a reload without an unload seen): all of now is new.
	e.m.prefixHits.WithLabelValues(model).Add(now.hits)
	e.m.prefixQueries.WithLabelValues(model).Add(now.queries)
	e.v.prefixHits.WithLabelValues(model).Add(now.hits)
	e.v.prefixQueries.WithLabelValues(model).Add(now.queries)
}

// finishedReason is vLLM's finished_reason for one of the module's finish
// values; ok is false for an error (or a value this module does not know),
// which is no success.
func finishedReason(finish events.FinishReason) (reason string, ok bool) {
	switch finish {
	case events.FinishStop:
		return reasonStop, true
	case events.FinishLength:
		return reasonLength, true
	case events.FinishCancelled:
		return reasonAbort, true
	}
	return "", false
}

// count adds n, a token count, to c; a negative count (from no validated
// source) would make client_golang panic.
func count(c prometheus.Counter, n int64) {
	if n > 0 {
		c.Add(float64(n))
	}
}

func (e *Exporter) observeRequest(model string, p *events.RequestFinished) {
	count(e.m.prompt.WithLabelValues(model), p.PromptTokens)
	count(e.m.cached.WithLabelValues(model), p.CachedPromptTokens)
	count(e.m.gen.WithLabelValues(model), p.CompletionTokens)
	reason, ok := finishedReason(p.Finish)
	if !ok {
		// A failed request's timings say how fast it failed, not how fast
		// the model serves; they stay out of the latency histograms.
		e.m.errors.WithLabelValues(model).Inc()
		return
	}
	e.m.success.WithLabelValues(model, reason).Inc()
	e.m.promptLen.WithLabelValues(model).Observe(float64(max(p.PromptTokens, 0)))
	e.m.genLen.WithLabelValues(model).Observe(float64(max(p.CompletionTokens, 0)))
	e.m.e2e.WithLabelValues(model).Observe(p.TotalMs / 1000)
	// A timing that did not happen (null) is not observed: a zero would
	// drag the percentiles down.
	if p.TTFTMs != nil {
		e.m.ttft.WithLabelValues(model).Observe(*p.TTFTMs / 1000)
	}
	if p.QueueMs != nil {
		e.m.queue.WithLabelValues(model).Observe(*p.QueueMs / 1000)
	}
	if p.DecodeTokensPerSecond != nil && *p.DecodeTokensPerSecond > 0 {
		e.m.tpot.WithLabelValues(model).Observe(1 / *p.DecodeTokensPerSecond)
	}
}

// observeLoad counts a load under model; tracked says whether model is the
// model's own label, whose gauges and state it may set.
func (e *Exporter) observeLoad(model string, tracked bool, p *events.ModelLoad) {
	switch p.Phase {
	case events.PhaseFinished, events.PhaseFailed:
		e.m.loads.WithLabelValues(model, p.Phase).Inc()
	}
	switch p.Phase {
	case events.PhaseFinished:
		if p.Ms != nil {
			e.m.loadTime.WithLabelValues(model).Observe(*p.Ms / 1000)
		}
		if !tracked {
			return
		}
		st := e.models[model]
		st.loaded, st.live = true, true
		e.m.resident.WithLabelValues(model).Set(1)
		e.v.awake(model, true)
		if p.Ms != nil {
			e.m.loadSeconds.WithLabelValues(model).Set(*p.Ms / 1000)
		}
		if p.WeightsBytes != nil {
			e.m.weights.WithLabelValues(model).Set(float64(*p.WeightsBytes))
		}
	case events.PhaseFailed, events.PhaseStarted:
		if tracked {
			e.models[model].live = p.Phase == events.PhaseStarted
			e.m.resident.WithLabelValues(model).Set(0)
			e.v.awake(model, false)
		}
	}
}
