package prom

import (
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// Names says which families the exposition serves (serve --prom-names).
type Names string

const (
	// NamesBoth serves this module's mlx_ families and vLLM's vllm: ones,
	// the default: the module's own dashboard and vLLM's both work.
	NamesBoth Names = "both"
	// NamesMLX serves the mlx_ families only.
	NamesMLX Names = "mlx"
	// NamesVLLM serves the vllm: families only, for a store that should
	// hold one set of names across a fleet of vLLM and mlx hosts.
	NamesVLLM Names = "vllm"
)

// ParseNames reads --prom-names.
func ParseNames(s string) (Names, bool) {
	switch n := Names(s); n {
	case NamesBoth, NamesMLX, NamesVLLM:
		return n, true
	}
	return "", false
}

// vLLM's buckets for its request-phase histograms (e2e, queue, inference,
// prefill, decode), which differ from this module's queue buckets.
var requestPhaseBuckets = latencyBuckets

// tokenBuckets are vLLM's build_1_2_5_buckets(max_model_len) for the
// request length histograms. The events carry no context length, so the
// bound is 2^20 tokens: 1, 2, 5, 10, … 500000, 1000000.
var tokenBuckets = buckets125(1 << 20)

// buckets125 is vLLM's build_1_2_5_buckets: 1, 2, 5 times the powers of
// ten, up to max.
func buckets125(max float64) []float64 {
	var out []float64
	for p := 1.0; ; p *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if m*p > max {
				return out
			}
			out = append(out, m*p)
		}
	}
}

// vllmMetrics are vLLM's own families, under vLLM's names (vllm:…), with
// its model_name label, types and buckets, computed from the same events as
// the mlx_ ones, in a registry of their own so that the exposition can
// serve either set (Names) and OTLP pushes only the module's.
type vllmMetrics struct {
	running, waiting, kvUsage *prometheus.GaugeVec
	// sleep is vllm:engine_sleep_state{sleep_state}: awake while the host
	// serves the model, discard_all once it unloaded it (its weights are
	// gone); weights_offloaded is never 1, as an MLX host offloads none.
	sleep *prometheus.GaugeVec

	// waitingByReason is the queue by vLLM's reason: capacity is the
	// host's queue (requests waiting for a batch slot); the host defers
	// none for vLLM's other reason (a LoRA budget, a KV transfer).
	waitingByReason *prometheus.GaugeVec

	prompt, gen, success, prefixHits, prefixQueries *prometheus.CounterVec
	// cached and bySource split the prompt tokens of finished requests:
	// served from the host's prefix cache, or computed by prefill; none
	// comes from another instance (external_kv_transfer stays 0).
	cached, bySource *prometheus.CounterVec

	ttft, e2e, queue, inference, prefill, decode, tpot *prometheus.HistogramVec
	promptLen, genLen, maxGen                          *prometheus.HistogramVec
	// prefillKV is the prompt tokens a request's prefill computed: its
	// prompt less what the prefix cache served.
	prefillKV *prometheus.HistogramVec
	// itl is observed once per inter-token interval, as vLLM does; a
	// request.finished carries the decode rate, not each interval, so a
	// request's intervals are its mean, (completion − 1) times.
	itl *weightedHistogramVec

	all []*prometheus.MetricVec
}

// engineLabels is vLLM's engine label on every family: an MLX host is one
// engine, index 0, as a vLLM without data parallelism labels itself.
var engineLabels = prometheus.Labels{"engine": "0"}

func vgauge(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:" + name, Help: help, ConstLabels: engineLabels}, labels)
}

func vcounter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:" + name, Help: help, ConstLabels: engineLabels}, labels)
}

func vhistogram(name, help string, buckets []float64) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "vllm:" + name, Help: help, Buckets: buckets,
		ConstLabels: engineLabels}, []string{modelLabel})
}

// Prompt token sources of vllm:prompt_tokens_by_source_total.
const (
	sourceCompute  = "local_compute"
	sourceCacheHit = "local_cache_hit"
	sourceTransfer = "external_kv_transfer"
)

func newVLLMMetrics(reg prometheus.Registerer) *vllmMetrics {
	v := &vllmMetrics{
		running: vgauge("num_requests_running", "Number of requests in model execution batches.", modelLabel),
		waiting: vgauge("num_requests_waiting", "Number of requests waiting to be processed.", modelLabel),
		kvUsage: vgauge("kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", modelLabel),
		sleep: vgauge("engine_sleep_state", "Whether the model's engine is awake (sleep_state awake 1) or its weights discarded "+
			"(discard_all 1), from the host's load and unload events; weights_offloaded stays 0.", modelLabel, "sleep_state"),

		waitingByReason: vgauge("num_requests_waiting_by_reason", "Number of requests waiting to be processed, by reason: "+
			"capacity (the host's queue for a batch slot); the host defers none.", modelLabel, "reason"),

		prompt: vcounter("prompt_tokens_total", "Number of prefill tokens processed.", modelLabel),
		cached: vcounter("prompt_tokens_cached_total", "Prompt tokens of finished requests served from the prefix cache.", modelLabel),
		bySource: vcounter("prompt_tokens_by_source_total", "Prompt tokens of finished requests by source: computed by prefill "+
			"(local_compute), served from the prefix cache (local_cache_hit) or by another instance (external_kv_transfer, none).", modelLabel, "source"),
		gen:           vcounter("generation_tokens_total", "Number of generation tokens processed.", modelLabel),
		success:       vcounter("request_success_total", "Count of successfully processed requests.", modelLabel, "finished_reason"),
		prefixHits:    vcounter("prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", modelLabel),
		prefixQueries: vcounter("prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", modelLabel),

		ttft:      vhistogram("time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftBuckets),
		e2e:       vhistogram("e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", requestPhaseBuckets),
		queue:     vhistogram("request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", requestPhaseBuckets),
		inference: vhistogram("request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", requestPhaseBuckets),
		prefill:   vhistogram("request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", requestPhaseBuckets),
		decode:    vhistogram("request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", requestPhaseBuckets),
		tpot:      vhistogram("request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", tpotBuckets),
		promptLen: vhistogram("request_prompt_tokens", "Number of prefill tokens processed.", tokenBuckets),
		genLen:    vhistogram("request_generation_tokens", "Number of generation tokens processed.", tokenBuckets),
		maxGen:    vhistogram("request_max_num_generation_tokens", "Histogram of maximum number of requested generation tokens.", tokenBuckets),
		prefillKV: vhistogram("request_prefill_kv_computed_tokens", "Prompt tokens a request's prefill computed (its prompt less the cached tokens).", tokenBuckets),
		itl: newWeightedHistogramVec("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
			tpotBuckets),
	}
	v.all = []*prometheus.MetricVec{v.running.MetricVec, v.waiting.MetricVec, v.kvUsage.MetricVec, v.sleep.MetricVec,
		v.waitingByReason.MetricVec,
		v.prompt.MetricVec, v.gen.MetricVec, v.success.MetricVec, v.prefixHits.MetricVec, v.prefixQueries.MetricVec,
		v.cached.MetricVec, v.bySource.MetricVec,
		v.ttft.MetricVec, v.e2e.MetricVec, v.queue.MetricVec, v.inference.MetricVec, v.prefill.MetricVec,
		v.decode.MetricVec, v.tpot.MetricVec, v.promptLen.MetricVec, v.genLen.MetricVec, v.maxGen.MetricVec,
		v.prefillKV.MetricVec}
	for _, c := range v.all {
		reg.MustRegister(c)
	}
	reg.MustRegister(v.itl)
	return v
}

// created makes a model's counters that vLLM creates at its start, at 0:
// every finished_reason and prompt token source.
func (v *vllmMetrics) created(model string) {
	for _, r := range []string{reasonStop, reasonLength, reasonAbort, string(events.FinishError)} {
		v.success.WithLabelValues(model, r)
	}
	v.cached.WithLabelValues(model)
	for _, src := range []string{sourceCompute, sourceCacheHit, sourceTransfer} {
		v.bySource.WithLabelValues(model, src)
	}
}

// scheduler sets model's batch and queue.
func (v *vllmMetrics) scheduler(model string, p *events.SchedulerSample) {
	v.running.WithLabelValues(model).Set(float64(p.Active))
	v.waiting.WithLabelValues(model).Set(float64(p.Queued))
	v.waitingByReason.WithLabelValues(model, "capacity").Set(float64(p.Queued))
	v.waitingByReason.WithLabelValues(model, "deferred").Set(0)
}

// awake sets model's sleep state: awake, or its weights discarded.
func (v *vllmMetrics) awake(model string, awake bool) {
	a, d := 0.0, 1.0
	if awake {
		a, d = 1, 0
	}
	v.sleep.WithLabelValues(model, "awake").Set(a)
	v.sleep.WithLabelValues(model, "weights_offloaded").Set(0)
	v.sleep.WithLabelValues(model, "discard_all").Set(d)
}

// deleteModel drops every series of model.
func (v *vllmMetrics) deleteModel(model string) {
	for _, c := range v.all {
		c.DeletePartialMatch(prometheus.Labels{modelLabel: model})
	}
	v.itl.delete(model)
}

// unloaded drops the gauges of a model that is gone: it has no batch and
// no cache.
func (v *vllmMetrics) unloaded(model string) {
	for _, g := range []*prometheus.GaugeVec{v.running, v.waiting, v.kvUsage} {
		g.DeleteLabelValues(model)
	}
	v.waitingByReason.DeletePartialMatch(prometheus.Labels{modelLabel: model})
}

// request observes one finished request as vLLM would have: its tokens,
// its finish reason (vLLM's abort for cancelled, and error), and, unless it
// failed, each phase whose times the event carries.
func (v *vllmMetrics) request(model string, p *events.RequestFinished) {
	count(v.prompt.WithLabelValues(model), p.PromptTokens)
	count(v.gen.WithLabelValues(model), p.CompletionTokens)
	computed := max(p.PromptTokens-max(p.CachedPromptTokens, 0), 0)
	count(v.cached.WithLabelValues(model), p.CachedPromptTokens)
	count(v.bySource.WithLabelValues(model, sourceCacheHit), p.CachedPromptTokens)
	count(v.bySource.WithLabelValues(model, sourceCompute), computed)
	reason, ok := finishedReason(p.Finish)
	if !ok {
		v.success.WithLabelValues(model, string(events.FinishError)).Inc()
		return
	}
	v.success.WithLabelValues(model, reason).Inc()
	v.promptLen.WithLabelValues(model).Observe(float64(max(p.PromptTokens, 0)))
	v.genLen.WithLabelValues(model).Observe(float64(max(p.CompletionTokens, 0)))
	// One sequence a request: the most any sequence of it generated is
	// what it generated.
	v.maxGen.WithLabelValues(model).Observe(float64(max(p.CompletionTokens, 0)))
	v.prefillKV.WithLabelValues(model).Observe(float64(computed))
	total := p.TotalMs / 1000
	v.e2e.WithLabelValues(model).Observe(total)
	var queue, ttft float64
	hasQueue, hasTTFT := p.QueueMs != nil, p.TTFTMs != nil
	if hasQueue {
		queue = *p.QueueMs / 1000
		v.queue.WithLabelValues(model).Observe(queue)
		v.inference.WithLabelValues(model).Observe(max(total-queue, 0))
	}
	if hasTTFT {
		ttft = *p.TTFTMs / 1000
		v.ttft.WithLabelValues(model).Observe(ttft)
		v.decode.WithLabelValues(model).Observe(max(total-ttft, 0))
		if hasQueue {
			v.prefill.WithLabelValues(model).Observe(max(ttft-queue, 0))
		}
	}
	if p.DecodeTokensPerSecond != nil && *p.DecodeTokensPerSecond > 0 {
		mean := 1 / *p.DecodeTokensPerSecond
		v.tpot.WithLabelValues(model).Observe(mean)
		if p.CompletionTokens > 1 {
			v.itl.observe(model, mean, uint64(p.CompletionTokens-1))
		}
	}
}

// weightedHistogramVec is a histogram by model whose observations carry a
// count: n observations of one value at once, which client_golang's
// histograms cannot take without n calls.
type weightedHistogramVec struct {
	desc    *prometheus.Desc
	buckets []float64

	mu     sync.Mutex
	series map[string]*weightedHistogram
}

type weightedHistogram struct {
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	count  uint64
}

func newWeightedHistogramVec(name, help string, buckets []float64) *weightedHistogramVec {
	return &weightedHistogramVec{
		desc:    prometheus.NewDesc(name, help, []string{modelLabel}, engineLabels),
		buckets: buckets, series: map[string]*weightedHistogram{},
	}
}

func (h *weightedHistogramVec) observe(model string, v float64, n uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.series[model]
	if s == nil {
		s = &weightedHistogram{counts: make([]uint64, len(h.buckets)+1)}
		h.series[model] = s
	}
	s.counts[sort.SearchFloat64s(h.buckets, v)] += n
	s.sum += v * float64(n)
	s.count += n
}

func (h *weightedHistogramVec) delete(model string) {
	h.mu.Lock()
	delete(h.series, model)
	h.mu.Unlock()
}

// Describe and Collect make it a prometheus.Collector.
func (h *weightedHistogramVec) Describe(ch chan<- *prometheus.Desc) { ch <- h.desc }

func (h *weightedHistogramVec) Collect(ch chan<- prometheus.Metric) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for model, s := range h.series {
		cum := make(map[float64]uint64, len(h.buckets))
		var c uint64
		for i, ub := range h.buckets {
			c += s.counts[i]
			cum[ub] = c
		}
		ch <- prometheus.MustNewConstHistogram(h.desc, s.count, s.sum, cum, model)
	}
}
