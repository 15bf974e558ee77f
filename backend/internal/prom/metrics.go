// Package prom exports the live serving metrics in the Prometheus text
// format at GET /api/metrics/prometheus.
//
// Names and labels follow vLLM's (vllm:num_requests_running{model_name}
// becomes mlx_num_requests_running{model_name}, and finished_reason takes
// vLLM's stop, length and abort), so that dashboards and alerts written for
// vLLM carry over with a prefix change. Every series carries a model_name
// label; a fleet of hosts is told apart by the instance label Prometheus
// adds.
package prom

import (
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

const namespace = "mlx"

// modelLabel is vLLM's name for the model label.
const modelLabel = "model_name"

// vLLM's finished_reason values. A request that ended in an error is not a
// success in vLLM's sense; it is counted in mlx_request_errors_total.
const (
	reasonStop   = "stop"
	reasonLength = "length"
	reasonAbort  = "abort" // the module's "cancelled"
)

// Buckets, in seconds, as vLLM uses them, so histograms from both aggregate.
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
		0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	tpotBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
		0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	latencyBuckets = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50,
		60, 120, 240, 480, 960, 1920, 7680}
	queueBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
		5, 10, 20, 40, 80, 160, 640, 2560}
	loadBuckets = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320, 640}
)

// metrics holds every collector the exporter maintains.
type metrics struct {
	running         *prometheus.GaugeVec
	waiting         *prometheus.GaugeVec
	capacity        *prometheus.GaugeVec
	tokensPerSecond *prometheus.GaugeVec

	kvUsage       *prometheus.GaugeVec
	cacheBytes    *prometheus.GaugeVec
	cacheCapacity *prometheus.GaugeVec
	prefixHits    *prometheus.CounterVec
	prefixQueries *prometheus.CounterVec

	ttft  *prometheus.HistogramVec
	queue *prometheus.HistogramVec
	e2e   *prometheus.HistogramVec
	tpot  *prometheus.HistogramVec
	// promptLen and genLen are each request's token counts, the
	// distributions of request length.
	promptLen *prometheus.HistogramVec
	genLen    *prometheus.HistogramVec
	prompt    *prometheus.CounterVec
	cached    *prometheus.CounterVec
	gen       *prometheus.CounterVec
	success   *prometheus.CounterVec
	errors    *prometheus.CounterVec

	weights     *prometheus.GaugeVec
	kvBytes     *prometheus.GaugeVec
	prefixBytes *prometheus.GaugeVec
	loadSeconds *prometheus.GaugeVec
	loadTime    *prometheus.HistogramVec
	loads       *prometheus.CounterVec
	unloads     *prometheus.CounterVec
	resident    *prometheus.GaugeVec

	// all is every collector above, to register them and to delete a
	// model's series from each.
	all []*prometheus.MetricVec
}

func gauge(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, labels)
}

func counter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
}

func histogram(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: name, Help: help, Buckets: buckets,
	}, labels)
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		running:         gauge("num_requests_running", "Requests decoding in the model's batch now.", modelLabel),
		waiting:         gauge("num_requests_waiting", "Requests waiting for a batch slot now.", modelLabel),
		capacity:        gauge("num_requests_capacity", "Batch slots of the model's scheduler.", modelLabel),
		tokensPerSecond: gauge("generation_tokens_per_second", "Generation rate over the last scheduler sampling interval.", modelLabel),

		kvUsage:       gauge("kv_cache_usage_ratio", "KV cache usage, 0 to 1 (1 means full).", modelLabel),
		cacheBytes:    gauge("cache_bytes", "Bytes a cache holds now.", modelLabel, "cache"),
		cacheCapacity: gauge("cache_capacity_bytes", "Bytes a cache may hold.", modelLabel, "cache"),
		prefixHits:    counter("prefix_cache_hits_total", "Prefix cache lookups that hit.", modelLabel),
		prefixQueries: counter("prefix_cache_queries_total", "Prefix cache lookups.", modelLabel),

		ttft:      histogram("time_to_first_token_seconds", "Time to first token.", ttftBuckets, modelLabel),
		queue:     histogram("request_queue_time_seconds", "Time a request waited before its prefill started.", queueBuckets, modelLabel),
		e2e:       histogram("e2e_request_latency_seconds", "End-to-end request latency.", latencyBuckets, modelLabel),
		tpot:      histogram("time_per_output_token_seconds", "Mean time per output token during decode.", tpotBuckets, modelLabel),
		promptLen: histogram("request_prompt_tokens", "Prompt tokens of each finished request.", tokenBuckets, modelLabel),
		genLen:    histogram("request_generation_tokens", "Generated tokens of each finished request.", tokenBuckets, modelLabel),
		prompt:    counter("prompt_tokens_total", "Prompt tokens of finished requests.", modelLabel),
		cached:    counter("prompt_tokens_cached_total", "Prompt tokens of finished requests served from the prefix cache.", modelLabel),
		gen:       counter("generation_tokens_total", "Generated tokens of finished requests.", modelLabel),
		success:   counter("request_success_total", "Requests that finished without an error, by vLLM's finished_reason (stop, length, abort: cancelled by the client).", modelLabel, "finished_reason"),
		errors:    counter("request_errors_total", "Requests that ended in an error, the engine's or the upstream's; model_name is empty when no model accepted the request.", modelLabel),

		weights:     gauge("model_weights_bytes", "Bytes of the model's weights in memory.", modelLabel),
		kvBytes:     gauge("model_kv_cache_bytes", "Bytes of the model's KV cache in memory.", modelLabel),
		prefixBytes: gauge("model_prefix_cache_bytes", "Bytes of the model's prefix cache in memory.", modelLabel),
		loadSeconds: gauge("model_load_seconds", "Duration of the model's last finished load.", modelLabel),
		loadTime:    histogram("model_load_time_seconds", "Durations of finished model loads.", loadBuckets, modelLabel),
		loads:       counter("model_loads_total", "Model loads by outcome (finished, failed).", modelLabel, "outcome"),
		unloads:     counter("model_unloads_total", "Model unloads by reason.", modelLabel, "reason"),
		resident:    gauge("model_resident", "1 while the model is loaded and serving, else 0.", modelLabel),
	}
	m.all = []*prometheus.MetricVec{m.running.MetricVec, m.waiting.MetricVec, m.capacity.MetricVec,
		m.tokensPerSecond.MetricVec, m.kvUsage.MetricVec, m.cacheBytes.MetricVec, m.cacheCapacity.MetricVec,
		m.prefixHits.MetricVec, m.prefixQueries.MetricVec, m.ttft.MetricVec, m.queue.MetricVec, m.e2e.MetricVec,
		m.tpot.MetricVec, m.promptLen.MetricVec, m.genLen.MetricVec, m.prompt.MetricVec, m.cached.MetricVec, m.gen.MetricVec, m.success.MetricVec,
		m.errors.MetricVec, m.weights.MetricVec, m.kvBytes.MetricVec, m.prefixBytes.MetricVec,
		m.loadSeconds.MetricVec, m.loadTime.MetricVec, m.loads.MetricVec, m.unloads.MetricVec, m.resident.MetricVec}
	for _, v := range m.all {
		reg.MustRegister(v)
	}
	reg.MustRegister(buildInfo())
	return m
}

// buildInfo is mlx_build_info, 1 with the binary's version: the one series
// every backend serves from its start, so that a fleet's query API knows a
// host before its first request, and knows when it stops reporting.
func buildInfo() prometheus.Collector {
	version := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		version = bi.Main.Version
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "build_info",
		Help: "1, labelled with the mlx-metrics version serving it.", ConstLabels: prometheus.Labels{"version": version}})
	g.Set(1)
	return g
}
