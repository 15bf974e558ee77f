package prom

import (
	"bufio"
	"io"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// replay feeds a recorded NDJSON event file to a new exporter.
func replay(t *testing.T, path string) *Exporter {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e := New(Options{})
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		ev, err := events.Parse(sc.Bytes())
		if err != nil {
			t.Fatalf("fixture line %q: %v", sc.Text(), err)
		}
		e.Observe(ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestExporterFromRecordedEvents(t *testing.T) {
	e := replay(t, "testdata/events.ndjson")

	// Counters and gauges, in the exposition format. Families listed but
	// absent from want must have no series (the unload removed them).
	const want = `
# HELP mlx_request_success_total Requests that finished without an error, by vLLM's finished_reason (stop, length, abort: cancelled by the client).
# TYPE mlx_request_success_total counter
mlx_request_success_total{finished_reason="abort",model_name="llama-3b"} 0
mlx_request_success_total{finished_reason="length",model_name="llama-3b"} 0
mlx_request_success_total{finished_reason="stop",model_name="llama-3b"} 0
mlx_request_success_total{finished_reason="abort",model_name="qwen3-8b"} 1
mlx_request_success_total{finished_reason="length",model_name="qwen3-8b"} 1
mlx_request_success_total{finished_reason="stop",model_name="qwen3-8b"} 1
# HELP mlx_prompt_tokens_total Prompt tokens of finished requests.
# TYPE mlx_prompt_tokens_total counter
mlx_prompt_tokens_total{model_name="qwen3-8b"} 1040
# HELP mlx_prompt_tokens_cached_total Prompt tokens of finished requests served from the prefix cache.
# TYPE mlx_prompt_tokens_cached_total counter
mlx_prompt_tokens_cached_total{model_name="qwen3-8b"} 256
# HELP mlx_generation_tokens_total Generated tokens of finished requests.
# TYPE mlx_generation_tokens_total counter
mlx_generation_tokens_total{model_name="qwen3-8b"} 264
# HELP mlx_prefix_cache_hits_total Prefix cache lookups that hit.
# TYPE mlx_prefix_cache_hits_total counter
mlx_prefix_cache_hits_total{model_name="qwen3-8b"} 55
# HELP mlx_prefix_cache_queries_total Prefix cache lookups.
# TYPE mlx_prefix_cache_queries_total counter
mlx_prefix_cache_queries_total{model_name="qwen3-8b"} 210
# HELP mlx_kv_cache_usage_ratio KV cache usage, 0 to 1 (1 means full).
# TYPE mlx_kv_cache_usage_ratio gauge
mlx_kv_cache_usage_ratio{model_name="llama-3b"} 0.25
# HELP mlx_model_loads_total Model loads by outcome (finished, failed).
# TYPE mlx_model_loads_total counter
mlx_model_loads_total{model_name="qwen3-8b",outcome="finished"} 2
# HELP mlx_model_unloads_total Model unloads by reason.
# TYPE mlx_model_unloads_total counter
mlx_model_unloads_total{model_name="qwen3-8b",reason="evicted"} 1
# HELP mlx_model_resident 1 while the model is loaded and serving, else 0.
# TYPE mlx_model_resident gauge
mlx_model_resident{model_name="qwen3-8b"} 1
# HELP mlx_model_load_seconds Duration of the model's last finished load.
# TYPE mlx_model_load_seconds gauge
mlx_model_load_seconds{model_name="qwen3-8b"} 1.5
`
	names := []string{
		"mlx_request_success_total", "mlx_prompt_tokens_total", "mlx_prompt_tokens_cached_total",
		"mlx_generation_tokens_total", "mlx_prefix_cache_hits_total", "mlx_prefix_cache_queries_total",
		"mlx_kv_cache_usage_ratio", "mlx_model_loads_total", "mlx_model_unloads_total",
		"mlx_model_resident", "mlx_model_load_seconds",
		// Removed by the unload:
		"mlx_num_requests_running", "mlx_num_requests_waiting", "mlx_model_weights_bytes",
	}
	if err := testutil.GatherAndCompare(e.Registry(), strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}

	// Histograms: null timings are not observed.
	hists := []struct {
		name       string
		count      uint64
		sum        float64
		firstLE    float64 // a bucket bound to check
		firstCount uint64  // its cumulative count
	}{
		{"mlx_time_to_first_token_seconds", 2, 0.115, 0.04, 1},
		{"mlx_request_queue_time_seconds", 1, 0.003, 0.005, 1},
		{"mlx_e2e_request_latency_seconds", 3, 7.01, 0.3, 1},
		{"mlx_time_per_output_token_seconds", 1, 0.025, 0.025, 1},
		{"mlx_model_load_time_seconds", 2, 5.7, 2.5, 1},
	}
	fams, err := e.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range hists {
		t.Run(tc.name, func(t *testing.T) {
			h := findHistogram(fams, tc.name)
			if h == nil {
				t.Fatalf("no %s series", tc.name)
			}
			if h.GetSampleCount() != tc.count {
				t.Errorf("count = %d, want %d", h.GetSampleCount(), tc.count)
			}
			if d := h.GetSampleSum() - tc.sum; d > 1e-9 || d < -1e-9 {
				t.Errorf("sum = %v, want %v", h.GetSampleSum(), tc.sum)
			}
			var got *uint64
			for _, b := range h.GetBucket() {
				if b.GetUpperBound() == tc.firstLE {
					c := b.GetCumulativeCount()
					got = &c
				}
			}
			if got == nil || *got != tc.firstCount {
				t.Errorf("bucket le=%v = %v, want %d", tc.firstLE, got, tc.firstCount)
			}
		})
	}
}

func findHistogram(fams []*dto.MetricFamily, name string) *dto.Histogram {
	for _, f := range fams {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetHistogram()
		}
	}
	return nil
}

func TestSchedulerAndCacheGauges(t *testing.T) {
	capacity := int64(1000)
	e := New(Options{})
	e.Observe(events.Event{Type: events.TypeSchedulerSample, At: 1, Payload: &events.SchedulerSample{
		Model: "m", Active: 4, Capacity: 16, Queued: 7, TokensPerSecond: 321}})
	e.Observe(events.Event{Type: events.TypeCacheSample, At: 1, Payload: &events.CacheSample{
		Model: "m", Cache: events.CacheKV, Bytes: 750, CapacityBytes: &capacity}})
	tests := []struct {
		metric string
		want   float64
	}{
		{"mlx_num_requests_running", 4},
		{"mlx_num_requests_waiting", 7},
		{"mlx_num_requests_capacity", 16},
		{"mlx_generation_tokens_per_second", 321},
		{"mlx_kv_cache_usage_ratio", 0.75},
	}
	fams, err := e.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		var got *float64
		for _, f := range fams {
			if f.GetName() == tc.metric {
				v := f.GetMetric()[0].GetGauge().GetValue()
				got = &v
			}
		}
		if got == nil || *got != tc.want {
			t.Errorf("%s = %v, want %v", tc.metric, got, tc.want)
		}
	}
}

func TestPrometheusRoute(t *testing.T) {
	e := replay(t, "testdata/events.ndjson")
	app := fiber.New()
	app.Get("/api/metrics/prometheus", e.Handle)
	tests := []struct {
		accept      string
		contentType string
		contains    string
	}{
		{"", "text/plain; version=0.0.4", `mlx_prefix_cache_hits_total{model_name="qwen3-8b"} 55`},
		{"application/openmetrics-text; version=1.0.0", "application/openmetrics-text", `mlx_prefix_cache_hits_total{model_name="qwen3-8b"} 55`},
	}
	for _, tc := range tests {
		req := httptest.NewRequest("GET", "/api/metrics/prometheus", nil)
		if tc.accept != "" {
			req.Header.Set("Accept", tc.accept)
		}
		resp, err := app.Test(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tc.contentType) {
			t.Errorf("Accept %q: Content-Type = %q, want prefix %q", tc.accept, ct, tc.contentType)
		}
		if !strings.Contains(string(body), tc.contains) {
			t.Errorf("Accept %q: body lacks %q:\n%s", tc.accept, tc.contains, body)
		}
	}
}

// byModel gathers e's registry as family -> model label -> value (a
// counter's or gauge's value, a histogram's count), summed over the other
// labels.
func byModel(t *testing.T, e *Exporter) map[string]map[string]float64 {
	t.Helper()
	fams, err := e.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
			for _, l := range m.GetLabel() {
				if l.GetName() == modelLabel {
					if out[f.GetName()] == nil {
						out[f.GetName()] = map[string]float64{}
					}
					out[f.GetName()][l.GetValue()] += v
				}
			}
		}
	}
	return out
}

// TestModelLabelBounded checks that a producer inventing model names cannot
// grow the registry without bound, nor keep a real model out of it: past
// the bound a new name takes the place of the least recently named model
// that never finished a load, else of an unloaded one, with every series of
// the one evicted deleted; only when every label is a loaded model that is
// resident or loading does a new one share OtherModels, with no gauges.
func TestModelLabelBounded(t *testing.T) {
	name := func(i int) string { return "junk-" + strconv.Itoa(i) }
	sched := func(model string) events.Event {
		return events.Event{Type: events.TypeSchedulerSample, At: 1, Payload: &events.SchedulerSample{
			Model: model, Active: 1, Capacity: 4}}
	}
	request := func(model string) events.Event {
		return events.Event{Type: events.TypeRequestFinished, At: 1, Payload: &events.RequestFinished{
			Model: model, RequestID: "r", Finish: events.FinishStop, PromptTokens: 10, TotalMs: 100}}
	}
	load := func(model, phase string) events.Event {
		return events.Event{Type: events.TypeModelLoad, At: 1, Payload: &events.ModelLoad{Model: model, Phase: phase}}
	}
	unload := func(model string) events.Event {
		return events.Event{Type: events.TypeModelUnload, At: 1, Payload: &events.ModelUnload{
			Model: model, Reason: events.ReasonIdle}}
	}
	// serves is a real model loading, then serving one request.
	serves := func(model string) []events.Event {
		return []events.Event{load(model, events.PhaseStarted), load(model, events.PhaseFinished), sched(model), request(model)}
	}
	flood := func(n int, each func(model string) []events.Event) []events.Event {
		var evs []events.Event
		for i := range n {
			evs = append(evs, each(name(i))...)
		}
		return evs
	}
	concat := func(parts ...[]events.Event) []events.Event {
		var evs []events.Event
		for _, p := range parts {
			evs = append(evs, p...)
		}
		return evs
	}
	type value struct {
		family, model string
		want          float64 // -1: no series
	}
	for _, tc := range []struct {
		name string
		max  int
		evs  []events.Event
		want []value
	}{
		{
			name: "a flood of sampled names, then a real model that loads and serves",
			max:  MaxModels,
			evs: concat(flood(MaxModels+100, func(m string) []events.Event { return []events.Event{sched(m), request(m)} }),
				serves("real")),
			want: []value{
				{"mlx_num_requests_running", "real", 1},
				{"mlx_request_success_total", "real", 1},
				{"mlx_e2e_request_latency_seconds", "real", 1},
				{"mlx_model_resident", "real", 1},
				{"mlx_model_loads_total", "real", 1},
				{"mlx_num_requests_running", name(0), -1}, // the least recently named went first
				{"mlx_request_success_total", name(100), -1},
				{"mlx_request_success_total", name(MaxModels + 99), 1},
				{"mlx_num_requests_running", OtherModels, -1},
				{"mlx_request_success_total", OtherModels, -1},
			},
		},
		{
			name: "a flood of loads that never finish, or fail, then a real model",
			max:  4,
			evs: concat(serves("real-a"), flood(10, func(m string) []events.Event {
				return []events.Event{load(m, events.PhaseStarted), load(m, events.PhaseFailed), load(m, events.PhaseStarted)}
			}), serves("real-b")),
			want: []value{
				{"mlx_model_resident", "real-a", 1},
				{"mlx_model_resident", "real-b", 1},
				{"mlx_request_success_total", "real-b", 1},
				{"mlx_model_loads_total", name(0), -1},
				{"mlx_model_resident", name(7), -1},
				{"mlx_model_loads_total", name(9), 1},
				{"mlx_model_loads_total", OtherModels, -1},
			},
		},
		{
			name: "the least recently named goes first",
			max:  4,
			evs: concat([]events.Event{sched("junk-old"), sched("junk-new"), sched("junk-old")},
				serves("l1"), serves("l2"), serves("l3")),
			want: []value{
				{"mlx_num_requests_running", "junk-old", 1},
				{"mlx_num_requests_running", "junk-new", -1},
				{"mlx_num_requests_running", "l3", 1},
			},
		},
		{
			name: "with no never-loaded model, the least recently named unloaded one goes",
			max:  4,
			evs: concat(serves("l1"), serves("l2"), []events.Event{unload("l2")}, serves("l3"),
				[]events.Event{unload("l3")}, serves("l4"), serves("l5")),
			want: []value{
				{"mlx_request_success_total", "l1", 1},
				{"mlx_request_success_total", "l2", -1},
				{"mlx_model_unloads_total", "l2", -1},
				{"mlx_model_resident", "l3", 0},
				{"mlx_model_resident", "l5", 1},
			},
		},
		{
			name: "resident and reloading models stay: the newcomer counts under OtherModels, without gauges",
			max:  4,
			evs: concat(serves("l1"), serves("l2"), serves("l3"), []events.Event{unload("l3"), load("l3", events.PhaseStarted)},
				serves("l4"), serves("l5")),
			want: []value{
				{"mlx_request_success_total", "l1", 1},
				{"mlx_model_resident", "l3", 0},
				{"mlx_request_success_total", OtherModels, 1},
				{"mlx_model_loads_total", OtherModels, 1},
				{"mlx_num_requests_running", OtherModels, -1},
				{"mlx_model_resident", OtherModels, -1},
				{"mlx_request_success_total", "l5", -1},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newExporter(tc.max, Options{})
			for _, ev := range tc.evs {
				e.Observe(ev)
			}
			got := byModel(t, e)
			for family, models := range got {
				labels := len(models)
				if _, ok := models[OtherModels]; ok {
					labels--
				}
				if labels > tc.max {
					t.Errorf("%s has %d model labels, want at most %d", family, labels, tc.max)
				}
			}
			for _, w := range tc.want {
				v, ok := got[w.family][w.model]
				switch {
				case w.want < 0 && ok:
					t.Errorf("%s{%s} = %v, want no series", w.family, w.model, v)
				case w.want >= 0 && (!ok || v != w.want):
					t.Errorf("%s{%s} = %v (present %v), want %v", w.family, w.model, v, ok, w.want)
				}
			}
		})
	}
}

// Prefix-cache totals restart with each load, so after an unload the first
// sample counts in full, even when it exceeds the totals before.
func TestPrefixTotalsAcrossReload(t *testing.T) {
	sample := func(hits, misses int64) events.Event {
		return events.Event{Type: events.TypeCacheSample, At: 1, Payload: &events.CacheSample{
			Model: "m", Cache: events.CachePrefix, Hits: &hits, Misses: &misses}}
	}
	e := New(Options{})
	for _, ev := range []events.Event{
		sample(2, 1), sample(3, 1), // 3 hits of 4 lookups
		{Type: events.TypeModelUnload, At: 2, Payload: &events.ModelUnload{Model: "m", Reason: events.ReasonEvicted}},
		{Type: events.TypeModelLoad, At: 3, Payload: &events.ModelLoad{Model: "m", Phase: events.PhaseFinished}},
		sample(10, 10), // 10 of 20 since the reload
	} {
		e.Observe(ev)
	}
	const want = `
# HELP mlx_prefix_cache_hits_total Prefix cache lookups that hit.
# TYPE mlx_prefix_cache_hits_total counter
mlx_prefix_cache_hits_total{model_name="m"} 13
# HELP mlx_prefix_cache_queries_total Prefix cache lookups.
# TYPE mlx_prefix_cache_queries_total counter
mlx_prefix_cache_queries_total{model_name="m"} 24
`
	if err := testutil.GatherAndCompare(e.Registry(), strings.NewReader(want),
		"mlx_prefix_cache_hits_total", "mlx_prefix_cache_queries_total"); err != nil {
		t.Error(err)
	}
}
