package scrape

import (
	"math"
	"slices"
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

	// The requests, read as their increase between two polls
	// (requests.sample).
	finished    []string                       // finished requests by reason (counter)
	reasonLabel string                         // the reason's label on finished
	reasons     map[string]events.FinishReason // the engine's reasons that are one of the events' finishes
	failed      []string                       // failed requests, counted apart from finished (counter, finish error)
	requests    []string                       // finished requests without a reason (counter), where finished is missing
	promptTotal []string                       // prompt tokens processed (counter)
	cachedTotal []string                       // of them, served from a cache (counter)
	genTokens   []string                       // generated tokens (counter) where genTotal is not one
	// Timing histograms, in seconds.
	queue, ttft, e2e, tpot, prefill, decode []string
	// Length histograms, in tokens.
	promptLen, genLen []string
}

// vllmReasons are vLLM's finished_reason values (and this module's, which
// exports vLLM's).
var vllmReasons = map[string]events.FinishReason{"stop": events.FinishStop, "length": events.FinishLength,
	"abort": events.FinishCancelled, "error": events.FinishError}

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

		finished: []string{"mlx_request_success_total"}, reasonLabel: "finished_reason", reasons: vllmReasons,
		failed:      []string{"mlx_request_errors_total"},
		promptTotal: []string{"mlx_prompt_tokens_total"},
		cachedTotal: []string{"mlx_prompt_tokens_cached_total"},
		genTokens:   []string{"mlx_generation_tokens_total"},
		queue:       []string{"mlx_request_queue_time_seconds"},
		ttft:        []string{"mlx_time_to_first_token_seconds"},
		e2e:         []string{"mlx_e2e_request_latency_seconds"},
		tpot:        []string{"mlx_time_per_output_token_seconds"},
		promptLen:   []string{"mlx_request_prompt_tokens"},
		genLen:      []string{"mlx_request_generation_tokens"},
	},
	KindVLLM: {
		modelLabels:   []string{"model_name"},
		running:       []string{"vllm:num_requests_running"},
		waiting:       []string{"vllm:num_requests_waiting"},
		kvUsage:       []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"},
		genTotal:      []string{"vllm:generation_tokens_total"},
		prefixHits:    []string{"vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"},
		prefixQueries: []string{"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"},

		finished: []string{"vllm:request_success_total"}, reasonLabel: "finished_reason", reasons: vllmReasons,
		promptTotal: []string{"vllm:prompt_tokens_total"},
		cachedTotal: []string{"vllm:prompt_tokens_cached_total"},
		queue:       []string{"vllm:request_queue_time_seconds"},
		ttft:        []string{"vllm:time_to_first_token_seconds"},
		e2e:         []string{"vllm:e2e_request_latency_seconds"},
		// Per request; else per token (the older names).
		tpot:      []string{"vllm:request_time_per_output_token_seconds", "vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"},
		prefill:   []string{"vllm:request_prefill_time_seconds"},
		decode:    []string{"vllm:request_decode_time_seconds"},
		promptLen: []string{"vllm:request_prompt_tokens"},
		genLen:    []string{"vllm:request_generation_tokens"},
	},
	// SGLang's names; an exposition in sglang_ names is read as these
	// (colonNames).
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

		requests:    []string{"sglang:num_requests_total"},
		promptTotal: []string{"sglang:prompt_tokens_total"},
		cachedTotal: []string{"sglang:cached_tokens_total"},
		queue:       []string{"sglang:queue_time_seconds"},
		ttft:        []string{"sglang:time_to_first_token_seconds"},
		e2e:         []string{"sglang:e2e_request_latency_seconds"},
		// Per request in older releases; per token since.
		tpot:      []string{"sglang:time_per_output_token_seconds", "sglang:inter_token_latency_seconds"},
		promptLen: []string{"sglang:prompt_tokens_histogram"},
		genLen:    []string{"sglang:generation_tokens_histogram"},
	},
	KindLlamaCpp: {
		running:     []string{"llamacpp:requests_processing"},
		waiting:     []string{"llamacpp:requests_deferred"},
		kvUsage:     []string{"llamacpp:kv_cache_usage_ratio"},
		genTotal:    []string{"llamacpp:tokens_predicted_total"},
		genRate:     []string{"llamacpp:predicted_tokens_seconds"},
		promptTotal: []string{"llamacpp:prompt_tokens_total"},
	},
}

// detectOrder is the order auto-detection tries the kinds in. Another
// mlx-metrics serves vLLM's vllm: families beside its own (--prom-names
// both), so its mlx_ ones decide first.
var detectOrder = []Kind{KindMLX, KindVLLM, KindSGLang, KindLlamaCpp}

// detect picks the first kind that reads a model off the families: the
// one that then works, not merely the first prefix seen (a vLLM exposition
// carries a cache_config_info without a model; an SGLang one may be in
// sglang_ names). KindAuto when none does.
func detect(fams map[string]*dto.MetricFamily, defaultModel string) Kind {
	for _, k := range detectOrder {
		d := dialects[k]
		if len(read(normalize(k, fams), d, defaultModel).models(d)) > 0 {
			return k
		}
	}
	return KindAuto
}

// normalize is fams as kind reads them: for SGLang, families in sglang_
// names (some releases, and routers or exporters that escape the colon,
// such as sgl-router's /engine_metrics) under their sglang: names, where
// the exposition has no family of that name already.
func normalize(kind Kind, fams map[string]*dto.MetricFamily) map[string]*dto.MetricFamily {
	if kind != KindSGLang {
		return fams
	}
	var out map[string]*dto.MetricFamily
	for name, f := range fams {
		rest, ok := strings.CutPrefix(name, "sglang_")
		if !ok {
			continue
		}
		colon := "sglang:" + rest
		if _, taken := fams[colon]; taken {
			continue
		}
		if out == nil {
			out = make(map[string]*dto.MetricFamily, len(fams))
			for n, g := range fams {
				out[n] = g
			}
		}
		out[colon] = f
	}
	if out == nil {
		return fams
	}
	return out
}

// agg sums the series of one metric for one model; engines running data
// parallel ranks expose one series per rank.
type agg struct {
	sum float64
	n   int
}

// values is one scrape's gauges and counters: metric name → model →
// aggregate.
type values map[string]map[string]agg

// read aggregates the gauges, counters and untyped series of the families
// d names by model.
func read(fams map[string]*dto.MetricFamily, d dialect, defaultModel string) values {
	v := values{}
	for _, names := range [][]string{d.running, d.waiting, d.capacity, d.kvUsage, d.genRate, d.prefixHits, d.prefixQueries} {
		for _, name := range names {
			for _, m := range fams[name].GetMetric() {
				x, ok := scalar(m)
				if !ok {
					continue
				}
				model := modelOf(m, d.modelLabels, defaultModel)
				if v[name] == nil {
					v[name] = map[string]agg{}
				}
				a := v[name][model]
				a.sum += x
				a.n++
				v[name][model] = a
			}
		}
	}
	return v
}

// scalar is a gauge's, counter's or untyped series' value; false for
// another type or a value that is not finite.
func scalar(m *dto.Metric) (float64, bool) {
	var x float64
	switch {
	case m.Gauge != nil:
		x = m.GetGauge().GetValue()
	case m.Counter != nil:
		x = m.GetCounter().GetValue()
	case m.Untyped != nil:
		x = m.GetUntyped().GetValue()
	default:
		return 0, false
	}
	return x, !math.IsNaN(x) && !math.IsInf(x, 0)
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

// labelOf is m's label name, "" when it has none.
func labelOf(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
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

// cumulative is one histogram series as exposed: the cumulative count at
// each finite bound, ascending, the count of all and their sum.
type cumulative struct {
	bounds []float64
	cum    []float64
	count  float64
	sum    float64
}

func cumulativeOf(h *dto.Histogram) *cumulative {
	bs := h.GetBucket()
	c := &cumulative{count: float64(h.GetSampleCount()), sum: h.GetSampleSum()}
	if f := h.GetSampleCountFloat(); f > 0 && c.count == 0 {
		c.count = f
	}
	type b struct{ ub, cum float64 }
	var list []b
	for _, x := range bs {
		ub := x.GetUpperBound()
		if math.IsInf(ub, 0) || math.IsNaN(ub) {
			continue
		}
		cum := float64(x.GetCumulativeCount())
		if f := x.GetCumulativeCountFloat(); f > 0 && cum == 0 {
			cum = f
		}
		list = append(list, b{ub, cum})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ub < list[j].ub })
	for i, x := range list {
		if i > 0 && x.ub == list[i-1].ub {
			continue
		}
		c.bounds = append(c.bounds, x.ub)
		c.cum = append(c.cum, x.cum)
	}
	return c
}

// increase is c's increase since prev, as per-bucket counts (the last over
// every bound) and sum; all of c when prev is a different histogram or
// more than c (the engine restarted), as Prometheus' increase() reads a
// counter reset.
func (c *cumulative) increase(prev *cumulative) (counts []float64, sum float64) {
	reset := !slices.Equal(c.bounds, prev.bounds) || c.count < prev.count
	for i := range c.cum {
		if !reset && c.cum[i] < prev.cum[i] {
			reset = true
		}
	}
	base := func(i int) float64 { return 0 }
	baseCount, baseSum := 0.0, 0.0
	if !reset {
		base = func(i int) float64 { return prev.cum[i] }
		baseCount, baseSum = prev.count, prev.sum
	}
	counts = make([]float64, len(c.bounds)+1)
	below := 0.0
	for i := range c.bounds {
		d := c.cum[i] - base(i)
		counts[i] = max(d-below, 0)
		below = max(d, below)
	}
	counts[len(c.bounds)] = max(c.count-baseCount-below, 0)
	return counts, max(c.sum-baseSum, 0)
}

// seriesKey names one series between polls: its family and labels.
type seriesKey struct{ name, labels string }

func keyOf(name string, m *dto.Metric) seriesKey {
	var b strings.Builder
	ls := m.GetLabel()
	idx := make([]int, len(ls))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return ls[idx[a]].GetName() < ls[idx[b]].GetName() })
	for _, i := range idx {
		b.WriteString(ls[i].GetName())
		b.WriteByte(0)
		b.WriteString(ls[i].GetValue())
		b.WriteByte(0)
	}
	return seriesKey{name, b.String()}
}

// last is what the mapper remembers of a series between polls.
type last struct {
	value float64
	hist  *cumulative
}

// mapper turns successive scrapes of one endpoint into events.
type mapper struct {
	kind         Kind
	defaultModel string
	// prev is each counter and histogram series read at the last poll,
	// at prevAt (zero before the first).
	prev   map[seriesKey]last
	prevAt time.Time
}

func newMapper(kind Kind, defaultModel string) *mapper {
	return &mapper{kind: kind, defaultModel: defaultModel, prev: map[seriesKey]last{}}
}

// increases are one poll's counter and histogram increases by model.
type increases struct {
	counters map[string]map[string]float64              // family → model → increase
	reasons  map[string]map[events.FinishReason]float64 // model → finish → increase of finished
	hists    map[string]map[string]*events.Histogram    // family → model → increase
	seen     map[string]map[string]bool                 // family → models with a series read before
}

// increases reads the increase of every counter and histogram series d
// names since the last poll, each series apart (a rank restarting resets
// its own counters, not the sum's), summed by model; and remembers them
// for the next. A series seen for the first time is where its counting
// starts, as in Prometheus.
func (mp *mapper) increases(fams map[string]*dto.MetricFamily, d dialect) increases {
	inc := increases{counters: map[string]map[string]float64{}, reasons: map[string]map[events.FinishReason]float64{},
		hists: map[string]map[string]*events.Histogram{}, seen: map[string]map[string]bool{}}
	next := make(map[seriesKey]last, len(mp.prev))
	note := func(name, model string) {
		if inc.seen[name] == nil {
			inc.seen[name] = map[string]bool{}
		}
		inc.seen[name][model] = true
	}
	for _, names := range [][]string{d.genTotal, d.finished, d.failed, d.requests, d.promptTotal, d.cachedTotal, d.genTokens} {
		for _, name := range names {
			for _, m := range fams[name].GetMetric() {
				x, ok := scalar(m)
				if !ok {
					continue
				}
				k := keyOf(name, m)
				next[k] = last{value: x}
				p, seen := mp.prev[k]
				if !seen || p.hist != nil {
					continue
				}
				model := modelOf(m, d.modelLabels, mp.defaultModel)
				note(name, model)
				delta := x - p.value
				if x < p.value {
					delta = x // a reset: counting again from 0
				}
				if delta <= 0 {
					continue
				}
				if inc.counters[name] == nil {
					inc.counters[name] = map[string]float64{}
				}
				inc.counters[name][model] += delta
				if slices.Contains(d.finished, name) {
					if f, ok := d.reasons[labelOf(m, d.reasonLabel)]; ok {
						if inc.reasons[model] == nil {
							inc.reasons[model] = map[events.FinishReason]float64{}
						}
						inc.reasons[model][f] += delta
					}
				}
			}
		}
	}
	for _, group := range []struct {
		names []string
		scale float64 // to the event's unit: seconds to ms, tokens as they are
	}{{d.queue, 1000}, {d.ttft, 1000}, {d.e2e, 1000}, {d.tpot, 1000}, {d.prefill, 1000}, {d.decode, 1000},
		{d.promptLen, 1}, {d.genLen, 1}} {
		for _, name := range group.names {
			for _, m := range fams[name].GetMetric() {
				if m.Histogram == nil {
					continue
				}
				c := cumulativeOf(m.GetHistogram())
				if !finite(c) {
					continue
				}
				k := keyOf(name, m)
				next[k] = last{hist: c}
				p, seen := mp.prev[k]
				if !seen || p.hist == nil || len(c.bounds) == 0 {
					continue
				}
				model := modelOf(m, d.modelLabels, mp.defaultModel)
				note(name, model)
				counts, sum := c.increase(p.hist)
				addHistogram(inc.hists, name, model, c.bounds, counts, sum, group.scale)
			}
		}
	}
	mp.prev = next
	return inc
}

func finite(c *cumulative) bool {
	for _, x := range append(append([]float64{c.count, c.sum}, c.bounds...), c.cum...) {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < -1e15 || x > 1e15 {
			return false
		}
	}
	return true
}

// addHistogram sums one series' increase into its model's histogram of
// the family, scaled to the event's unit. A series whose bounds differ
// from the model's others is left out (no engine exposes that).
func addHistogram(into map[string]map[string]*events.Histogram, name, model string, bounds, counts []float64, sum, scale float64) {
	if into[name] == nil {
		into[name] = map[string]*events.Histogram{}
	}
	h := into[name][model]
	if h == nil {
		h = &events.Histogram{Bounds: make([]float64, len(bounds)), Counts: make([]int64, len(counts))}
		for i, b := range bounds {
			h.Bounds[i] = b * scale
		}
		into[name][model] = h
	} else if !sameBounds(h.Bounds, bounds, scale) {
		return
	}
	for i, c := range counts {
		h.Counts[i] += int64(math.Min(math.Round(c), events.MaxLookups))
	}
	h.Sum += sum * scale
}

// sameBounds reports whether scaled are bounds times scale.
func sameBounds(scaled, bounds []float64, scale float64) bool {
	if len(scaled) != len(bounds) {
		return false
	}
	for i, b := range bounds {
		if scaled[i] != b*scale {
			return false
		}
	}
	return true
}

// firstInc is the increase for model of the first of names with a series
// read before; false when none has.
func (inc increases) firstInc(names []string, model string) (float64, bool) {
	for _, n := range names {
		if inc.seen[n][model] {
			return inc.counters[n][model], true
		}
	}
	return 0, false
}

// firstHist is the increase for model of the first of names with a series
// read before (nil when it holds nothing).
func (inc increases) firstHist(names []string, model string) (*events.Histogram, bool) {
	for _, n := range names {
		if inc.seen[n][model] {
			h := inc.hists[n][model]
			if h == nil || h.Count() == 0 {
				return nil, true
			}
			return h, true
		}
	}
	return nil, false
}

// Map converts one scrape taken at now. It returns no events when the
// dialect is unknown or nothing maps.
func (mp *mapper) Map(fams map[string]*dto.MetricFamily, now time.Time) []events.Event {
	if mp.kind == KindAuto {
		mp.kind = detect(fams, mp.defaultModel)
	}
	d, ok := dialects[mp.kind]
	if !ok {
		return nil
	}
	fams = normalize(mp.kind, fams)
	v := read(fams, d, mp.defaultModel)
	inc := mp.increases(fams, d)
	dt := now.Sub(mp.prevAt)
	polled := !mp.prevAt.IsZero()
	mp.prevAt = now
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
			TokensPerSecond: rate(v, inc, d, model, dt),
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
		if polled {
			if p := requestsSample(inc, d, model, dt); p != nil {
				out = append(out, events.Event{Type: events.TypeRequestsSample, At: at, Payload: p})
			}
		}
	}
	return out
}

// rate is the generation rate since the previous scrape, from the token
// counter's increase when the model's counter was read before; else the
// engine's own throughput gauge; else 0 (the first scrape of an engine
// that only has the counter).
func rate(v values, inc increases, d dialect, model string, dt time.Duration) float64 {
	if n, ok := inc.firstInc(d.genTotal, model); ok && dt > 0 {
		return n / dt.Seconds()
	}
	if g, ok := v.first(d.genRate, model, false); ok && g >= 0 {
		return g
	}
	return 0
}

// requestsSample is model's requests between the last poll and this one,
// dt apart; nil when nothing moved.
func requestsSample(inc increases, d dialect, model string, dt time.Duration) *events.RequestsSample {
	whole := func(x float64) int64 { return int64(math.Min(math.Round(x), events.MaxLookups)) }
	p := &events.RequestsSample{Model: model, IntervalMs: math.Min(math.Max(float64(dt.Milliseconds()), 0), events.MaxDurationMs)}
	p.QueueMs, _ = inc.firstHist(d.queue, model)
	p.TTFTMs, _ = inc.firstHist(d.ttft, model)
	p.TotalMs, _ = inc.firstHist(d.e2e, model)
	p.TPOTMs, _ = inc.firstHist(d.tpot, model)
	p.PrefillMs, _ = inc.firstHist(d.prefill, model)
	p.DecodeMs, _ = inc.firstHist(d.decode, model)
	p.PromptLengths, _ = inc.firstHist(d.promptLen, model)
	p.GenerationLengths, _ = inc.firstHist(d.genLen, model)

	// Finished: by reason where the engine counts reasons, else its
	// request counter, else its end-to-end histogram's count.
	if n, ok := inc.firstInc(d.finished, model); ok {
		r := inc.reasons[model]
		p.ByFinish = events.FinishTotalsByReason{Stop: whole(r[events.FinishStop]), Length: whole(r[events.FinishLength]),
			Cancelled: whole(r[events.FinishCancelled]), Error: whole(r[events.FinishError])}
		failed, _ := inc.firstInc(d.failed, model)
		p.ByFinish.Error += whole(failed)
		p.Finished = max(whole(n+failed), p.ByFinish.Sum())
	} else if n, ok := inc.firstInc(d.requests, model); ok {
		p.Finished = whole(n)
	} else if p.TotalMs != nil {
		p.Finished = p.TotalMs.Count()
	}
	prompt, _ := inc.firstInc(d.promptTotal, model)
	p.PromptTokens = whole(prompt)
	if cached, ok := inc.firstInc(d.cachedTotal, model); ok {
		// The two counters are read at one instant but not moved at
		// one: a share over 1 is not the engine's meaning.
		c := min(whole(cached), p.PromptTokens)
		p.CachedPromptTokens = &c
	}
	gen, ok := inc.firstInc(d.genTokens, model)
	if !ok {
		gen, _ = inc.firstInc(d.genTotal, model)
	}
	p.GenerationTokens = whole(gen)
	if p.Finished == 0 && p.PromptTokens == 0 && p.GenerationTokens == 0 && p.QueueMs == nil && p.TTFTMs == nil &&
		p.TotalMs == nil && p.TPOTMs == nil && p.PrefillMs == nil && p.DecodeMs == nil && p.PromptLengths == nil &&
		p.GenerationLengths == nil {
		return nil
	}
	return p
}
