package prom

import (
	"context"
	"math"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/promtest"
)

// vllmDashboard is every query of vLLM's own Grafana dashboard
// (examples/observability/prometheus_grafana/grafana.json in
// vllm-project/vllm, its 27 queries, as written there), by panel. Grafana
// fills in $model_name and $__rate_interval.
var vllmDashboard = []struct{ panel, expr string }{
	{"E2E Request Latency P99", `histogram_quantile(0.99, sum by(le) (rate(vllm:e2e_request_latency_seconds_bucket{model_name="$model_name"}[$__rate_interval])))`},
	{"E2E Request Latency P95", `histogram_quantile(0.95, sum by(le) (rate(vllm:e2e_request_latency_seconds_bucket{model_name="$model_name"}[$__rate_interval])))`},
	{"E2E Request Latency P90", `histogram_quantile(0.9, sum by(le) (rate(vllm:e2e_request_latency_seconds_bucket{model_name="$model_name"}[$__rate_interval])))`},
	{"E2E Request Latency P50", `histogram_quantile(0.5, sum by(le) (rate(vllm:e2e_request_latency_seconds_bucket{model_name="$model_name"}[$__rate_interval])))`},
	{"E2E Request Latency Average", "rate(vllm:e2e_request_latency_seconds_sum{model_name=\"$model_name\"}[$__rate_interval])\n/\nrate(vllm:e2e_request_latency_seconds_count{model_name=\"$model_name\"}[$__rate_interval])"},
	{"Token Throughput Prompt Tokens/Sec", `rate(vllm:prompt_tokens_total{model_name="$model_name"}[$__rate_interval])`},
	{"Token Throughput Generation Tokens/Sec", `rate(vllm:generation_tokens_total{model_name="$model_name"}[$__rate_interval])`},
	{"Inter Token Latency P99", `histogram_quantile(0.99, sum by(le) (rate(vllm:inter_token_latency_seconds_bucket{model_name="$model_name"}[$__rate_interval])))`},
	{"Inter Token Latency P95", `histogram_quantile(0.95, sum by(le) (rate(vllm:inter_token_latency_seconds_bucket{model_name="$model_name"}[$__rate_interval])))`},
	{"Inter Token Latency P90", `histogram_quantile(0.9, sum by(le) (rate(vllm:inter_token_latency_seconds_bucket{model_name="$model_name"}[$__rate_interval])))`},
	{"Inter Token Latency P50", `histogram_quantile(0.5, sum by(le) (rate(vllm:inter_token_latency_seconds_bucket{model_name="$model_name"}[$__rate_interval])))`},
	{"Inter Token Latency Mean", "rate(vllm:inter_token_latency_seconds_sum{model_name=\"$model_name\"}[$__rate_interval])\n/\nrate(vllm:inter_token_latency_seconds_count{model_name=\"$model_name\"}[$__rate_interval])"},
	{"Scheduler State Num Running", `vllm:num_requests_running{model_name="$model_name"}`},
	{"Scheduler State Num Waiting", `vllm:num_requests_waiting{model_name="$model_name"}`},
	{"Time To First Token Latency P99", `histogram_quantile(0.99, sum by(le) (rate(vllm:time_to_first_token_seconds_bucket{model_name="$model_name"}[$__rate_interval])))`},
	{"Time To First Token Latency P95", `histogram_quantile(0.95, sum by(le) (rate(vllm:time_to_first_token_seconds_bucket{model_name="$model_name"}[$__rate_interval])))`},
	{"Time To First Token Latency P90", `histogram_quantile(0.9, sum by(le) (rate(vllm:time_to_first_token_seconds_bucket{model_name="$model_name"}[$__rate_interval])))`},
	{"Time To First Token Latency P50", `histogram_quantile(0.5, sum by(le) (rate(vllm:time_to_first_token_seconds_bucket{model_name="$model_name"}[$__rate_interval])))`},
	{"Time To First Token Latency Average", "rate(vllm:time_to_first_token_seconds_sum{model_name=\"$model_name\"}[$__rate_interval])\n/\nrate(vllm:time_to_first_token_seconds_count{model_name=\"$model_name\"}[$__rate_interval])"},
	{"Cache Utilization", `vllm:kv_cache_usage_perc{model_name="$model_name"}`},
	{"Request Prompt Length", `sum by(le) (increase(vllm:request_prompt_tokens_bucket{model_name="$model_name"}[$__rate_interval]))`},
	{"Request Generation Length", `sum by(le) (increase(vllm:request_generation_tokens_bucket{model_name="$model_name"}[$__rate_interval]))`},
	{"Finish Reason", `sum by(finished_reason) (increase(vllm:request_success_total{model_name="$model_name"}[$__rate_interval]))`},
	{"Queue Time", `rate(vllm:request_queue_time_seconds_sum{model_name="$model_name"}[$__rate_interval])`},
	{"Requests Prefill and Decode Time Prefill", `rate(vllm:request_prefill_time_seconds_sum{model_name="$model_name"}[$__rate_interval])`},
	{"Requests Prefill and Decode Time Decode", `rate(vllm:request_decode_time_seconds_sum{model_name="$model_name"}[$__rate_interval])`},
	{"Max Generation Token in Sequence Group", `rate(vllm:request_max_num_generation_tokens_sum{model_name="$model_name"}[$__rate_interval])`},
}

// hostTraffic feeds e what a host serving model publishes, a request every
// 50 ms with every timing, and its scheduler and KV samples, until stop.
func hostTraffic(e *Exporter, model string, stop <-chan struct{}) {
	f := func(v float64) *float64 { return &v }
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-time.After(50 * time.Millisecond): // the traffic's pace, not synchronisation
		}
		at := time.Now().UnixMilli()
		e.Observe(events.Event{Type: events.TypeRequestFinished, At: at, Payload: &events.RequestFinished{
			Model: model, RequestID: "r", Finish: []string{events.FinishStop, events.FinishLength}[i%2],
			PromptTokens: int64(200 + i%700), CachedPromptTokens: 100, CompletionTokens: int64(20 + i%100),
			QueueMs: f(float64(5 + i%40)), TTFTMs: f(float64(60 + i%90)), PrefillTokensPerSecond: f(4000),
			DecodeTokensPerSecond: f(float64(40 + i%30)), TotalMs: float64(900 + i%600)}})
		e.Observe(events.Event{Type: events.TypeSchedulerSample, At: at, Payload: &events.SchedulerSample{
			Model: model, Active: 1 + i%4, Queued: i % 3, Capacity: 8, TokensPerSecond: 55}})
		capacity := int64(1 << 30)
		e.Observe(events.Event{Type: events.TypeCacheSample, At: at, Payload: &events.CacheSample{
			Model: model, Cache: events.CacheKV, Bytes: int64(i%100+1) << 20, CapacityBytes: &capacity}})
	}
}

// Every query of vLLM's own Grafana dashboard, run by a real Prometheus
// scraping the exposition of a host's traffic, returns data: vLLM users
// keep their dashboard unchanged.
func TestVLLMDashboardHasData(t *testing.T) {
	if len(vllmDashboard) != 27 {
		t.Fatalf("%d queries, want vLLM dashboard's 27", len(vllmDashboard))
	}
	const model = "mlx-community/Qwen3-4B-4bit"
	e := New(Options{})
	srv := httptest.NewServer(promhttp.HandlerFor(e.Gatherer(), promhttp.HandlerOpts{EnableOpenMetrics: true}))
	defer srv.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); hostTraffic(e, model, stop) }()
	defer func() { close(stop); wg.Wait() }()

	prom := promtest.Start(t, time.Second, promtest.Job{Name: "mlx-metrics", Targets: []string{strings.TrimPrefix(srv.URL, "http://")}})
	prom.WaitScrapes(t, 5, time.Minute)
	// Grafana's $__rate_interval at a 1 s scrape interval is 4 s; 5 s
	// holds 4 or 5 scrapes.
	fill := strings.NewReplacer("$model_name", model, "$__rate_interval", "5s")
	for _, q := range vllmDashboard {
		t.Run(q.panel, func(t *testing.T) {
			got, err := prom.Query(context.Background(), fill.Replace(q.expr))
			if err != nil {
				t.Fatalf("%s: %v", q.expr, err)
			}
			positive := false
			for _, s := range got {
				if math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
					t.Errorf("%s: %v in %v", q.expr, s.Value, got)
				}
				positive = positive || s.Value > 0
			}
			// Gauges of a busy model, rates and increases of its traffic:
			// all above 0 (Num Waiting is 0 one sample in three).
			if len(got) == 0 || !positive && !strings.Contains(q.panel, "Waiting") {
				t.Errorf("%s: no data (%v)", q.expr, got)
			}
		})
	}
}
