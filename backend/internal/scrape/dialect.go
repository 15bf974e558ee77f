package scrape

import (
	"math"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// dialect names the metrics of one engine that carry what the events need.
// Each list holds candidates, newest name first; the first present wins.
type dialect struct {
	modelLabels []string // the model label's names, newest first; none when series carry none
	running     []string // requests decoding now (gauge)
	waiting     []string // requests queued (gauge)
	capacity    []string // batch slots (gauge); the engines above have none
	kvUsage     []string // KV cache usage, 0..1 (gauge)
	genTotal    []string // generated tokens so far (counter): rate between polls
	genRate     []string // generation rate (gauge), used when there is no counter rate
	// Prefix cache lookups in tokens, as running totals (counters).
	prefixHits    []string
	prefixQueries []string
}

var dialects = map[Kind]dialect{
	// Another mlx-metrics backend's GET /api/metrics/prometheus, so one
	// backend can gather a fleet's hosts.
	KindMLX: {
		// model_name since the exporter took vLLM's label; model before.
		modelLabels:   []string{"model_name", "model"},
		running:       []string{"mlx_num_requests_running"},
		waiting:       []string{"mlx_num_requests_waiting"},
		capacity:      []string{"mlx_num_requests_capacity"},
		kvUsage:       []string{"mlx_kv_cache_usage_ratio"},
		genRate:       []string{"mlx_generation_tokens_per_second"},
		prefixHits:    []string{"mlx_prefix_cache_hits_total"},
		prefixQueries: []string{"mlx_prefix_cache_queries_total"},
	},
	KindVLLM: {
		modelLabels:   []string{"model_name"},
		running:       []string{"vllm:num_requests_running"},
		waiting:       []string{"vllm:num_requests_waiting"},
		kvUsage:       []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
		genTotal:      []string{"vllm:generation_tokens_total"},
		prefixHits:    []string{"vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"},
		prefixQueries: []string{"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"},
	},
	KindSGLang: {
		modelLabels: []string{"model_name"},
		running:     []string{"sglang:num_running_reqs"},
		waiting:     []string{"sglang:num_queue_reqs"},
		kvUsage:     []string{"sglang:token_usage"},
		genTotal:    []string{"sglang:generation_tokens_total"},
		genRate:     []string{"sglang:gen_throughput"},
		// SGLang counts prompt tokens served from its radix cache.
		prefixHits:    []string{"sglang:cached_tokens_total"},
		prefixQueries: []string{"sglang:prompt_tokens_total"},
	},
	KindLlamaCpp: {
		running:  []string{"llamacpp:requests_processing"},
		waiting:  []string{"llamacpp:requests_deferred"},
		kvUsage:  []string{"llamacpp:kv_cache_usage_ratio"},
		genTotal: []string{"llamacpp:tokens_predicted_total"},
		genRate:  []string{"llamacpp:predicted_tokens_seconds"},
	},
}

// detect picks the dialect from the metric name prefixes. Another
// mlx-metrics serves vLLM's vllm: families beside its own (--prom-names
// both), so its mlx_ ones decide first.
func detect(fams map[string]*dto.MetricFamily) Kind {
	for name := range fams {
		if strings.HasPrefix(name, "mlx_build_info") || strings.HasPrefix(name, "mlx_num_requests_") {
			return KindMLX
		}
	}
	for name := range fams {
		switch {
		case strings.HasPrefix(name, "vllm:"):
			return KindVLLM
		case strings.HasPrefix(name, "sglang:"):
			return KindSGLang
		case strings.HasPrefix(name, "llamacpp:"):
			return KindLlamaCpp
		}
	}
	return KindAuto
}

// agg sums the series of one metric for one model; engines running data
// parallel ranks expose one series per rank.
type agg struct {
	sum float64
	n   int
}

// values is one scrape: metric name → model → aggregate.
type values map[string]map[string]agg

func read(fams map[string]*dto.MetricFamily, modelLabels []string, defaultModel string) values {
	v := values{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var x float64
			switch {
			case m.Gauge != nil:
				x = m.GetGauge().GetValue()
			case m.Counter != nil:
				x = m.GetCounter().GetValue()
			case m.Untyped != nil:
				x = m.GetUntyped().GetValue()
			default:
				continue // histograms and summaries carry nothing we map
			}
			if math.IsNaN(x) || math.IsInf(x, 0) {
				continue
			}
			model := modelOf(m, modelLabels, defaultModel)
			if v[name] == nil {
				v[name] = map[string]agg{}
			}
			a := v[name][model]
			a.sum += x
			a.n++
			v[name][model] = a
		}
	}
	return v
}

// modelOf is the value of the first of labels m carries, else def.
func modelOf(m *dto.Metric, labels []string, def string) string {
	for _, name := range labels {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == name && lp.GetValue() != "" {
				return lp.GetValue()
			}
		}
	}
	return def
}

// first is the first candidate metric present for model: its sum over
// series, or with mean set their mean (for ratios).
func (v values) first(names []string, model string, mean bool) (float64, bool) {
	for _, n := range names {
		if a, ok := v[n][model]; ok && a.n > 0 {
			if mean {
				return a.sum / float64(a.n), true
			}
			return a.sum, true
		}
	}
	return 0, false
}

// models lists, sorted, the models that report a scheduler gauge. A label
// value longer than events.MaxModelName is no model id, and no event may
// carry it.
func (v values) models(d dialect) []string {
	seen := map[string]bool{}
	var out []string
	for _, names := range [][]string{d.running, d.waiting} {
		for _, n := range names {
			for m := range v[n] {
				if !seen[m] && m != "" && len(m) <= events.MaxModelName {
					seen[m] = true
					out = append(out, m)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// count is a gauge as an event's count: engines' gauges can dip below 0
// (a decrement before its increment), which no event may carry.
func count(x float64) int { return int(math.Min(math.Max(x, 0), math.MaxInt32)) }

// previous is what the mapper remembers of a model between scrapes.
type previous struct {
	genTotal float64
	at       time.Time
}

// mapper turns successive scrapes of one endpoint into events.
type mapper struct {
	kind         Kind
	defaultModel string
	prev         map[string]previous
}

func newMapper(kind Kind, defaultModel string) *mapper {
	return &mapper{kind: kind, defaultModel: defaultModel, prev: map[string]previous{}}
}

// Map converts one scrape taken at now. It returns no events when the
// dialect is unknown or nothing maps.
func (mp *mapper) Map(fams map[string]*dto.MetricFamily, now time.Time) []events.Event {
	if mp.kind == KindAuto {
		mp.kind = detect(fams)
	}
	d, ok := dialects[mp.kind]
	if !ok {
		return nil
	}
	v := read(fams, d.modelLabels, mp.defaultModel)
	at := now.UnixMilli()
	var out []events.Event
	for _, model := range v.models(d) {
		running, _ := v.first(d.running, model, false)
		waiting, _ := v.first(d.waiting, model, false)
		// vLLM, SGLang and llama.cpp export no batch limit: 0 is unknown.
		capacity, _ := v.first(d.capacity, model, false)
		out = append(out, events.Event{Type: events.TypeSchedulerSample, At: at, Payload: &events.SchedulerSample{
			Model:           model,
			Active:          count(running),
			Capacity:        count(capacity),
			Queued:          count(waiting),
			TokensPerSecond: mp.rate(v, d, model, now),
		}})
		if u, ok := v.first(d.kvUsage, model, true); ok {
			u = math.Min(math.Max(u, 0), 1)
			out = append(out, events.Event{Type: events.TypeCacheSample, At: at, Payload: &events.CacheSample{
				Model: model, Cache: events.CacheKV, UsageRatio: &u,
			}})
		}
		hits, okH := v.first(d.prefixHits, model, false)
		queries, okQ := v.first(d.prefixQueries, model, false)
		if okH && okQ && hits >= 0 && queries >= hits {
			h, m := int64(hits), int64(queries)-int64(hits)
			out = append(out, events.Event{Type: events.TypeCacheSample, At: at, Payload: &events.CacheSample{
				Model: model, Cache: events.CachePrefix, Hits: &h, Misses: &m,
			}})
		}
	}
	return out
}

// rate is the generation rate since the previous scrape, from the token
// counter when there is one; else the engine's own throughput gauge; else 0
// (the first scrape of an engine that only has the counter).
func (mp *mapper) rate(v values, d dialect, model string, now time.Time) float64 {
	total, ok := v.first(d.genTotal, model, false)
	if ok {
		p, seen := mp.prev[model]
		mp.prev[model] = previous{genTotal: total, at: now}
		dt := now.Sub(p.at).Seconds()
		if seen && dt > 0 && total >= p.genTotal {
			return (total - p.genTotal) / dt
		}
	}
	if g, ok := v.first(d.genRate, model, false); ok && g >= 0 {
		return g
	}
	return 0
}
