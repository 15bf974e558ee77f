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
	e := New()
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
	e := New()
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
	e.Mount(app, app.Group("/api/metrics"))
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

// TestModelLabelBounded checks that a producer inventing model names cannot
// grow the registry without bound: models past MaxModels share the
// OtherModels label for counters and histograms, and report no gauges.
func TestModelLabelBounded(t *testing.T) {
	const extra = 5
	e := New()
	name := func(i int) string { return "model-" + strconv.Itoa(i) }
	for i := 0; i < MaxModels+extra; i++ {
		e.Observe(events.Event{Type: events.TypeSchedulerSample, At: 1, Payload: &events.SchedulerSample{
			Model: name(i), Active: 1, Capacity: 4}})
		e.Observe(events.Event{Type: events.TypeRequestFinished, At: 1, Payload: &events.RequestFinished{
			Model: name(i), RequestID: "r", Finish: events.FinishStop, PromptTokens: 10, TotalMs: 100}})
	}
	// A model seen before the bound keeps its own series.
	e.Observe(events.Event{Type: events.TypeRequestFinished, At: 2, Payload: &events.RequestFinished{
		Model: name(0), RequestID: "r", Finish: events.FinishStop, PromptTokens: 10, TotalMs: 100}})

	fams, err := e.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		family string
		series int
		other  float64 // the OtherModels series' value, or histogram count; -1 when it must be absent
		first  float64 // name(0)'s value or count
		summed float64 // over every series
	}{
		{"mlx_request_success_total", MaxModels + 1, extra, 2, MaxModels + extra + 1},
		{"mlx_prompt_tokens_total", MaxModels + 1, 10 * extra, 20, 10 * (MaxModels + extra + 1)},
		{"mlx_e2e_request_latency_seconds", MaxModels + 1, extra, 2, MaxModels + extra + 1},
		{"mlx_num_requests_running", MaxModels, -1, 1, MaxModels},
	}
	for _, tc := range tests {
		t.Run(tc.family, func(t *testing.T) {
			var f *dto.MetricFamily
			for _, g := range fams {
				if g.GetName() == tc.family {
					f = g
				}
			}
			if f == nil {
				t.Fatal("no such family")
			}
			if n := len(f.GetMetric()); n != tc.series {
				t.Errorf("%d series, want %d", n, tc.series)
			}
			byModel := map[string]float64{}
			var sum float64
			for _, m := range f.GetMetric() {
				v := m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
				for _, l := range m.GetLabel() {
					if l.GetName() == modelLabel {
						byModel[l.GetValue()] = v
					}
				}
				sum += v
			}
			other, hasOther := byModel[OtherModels]
			if tc.other < 0 && hasOther {
				t.Errorf("%s has an %q series", tc.family, OtherModels)
			}
			if tc.other >= 0 && other != tc.other {
				t.Errorf("%q = %v, want %v", OtherModels, other, tc.other)
			}
			if byModel[name(0)] != tc.first || sum != tc.summed {
				t.Errorf("%s = %v and sum %v, want %v and %v", name(0), byModel[name(0)], sum, tc.first, tc.summed)
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
	e := New()
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
