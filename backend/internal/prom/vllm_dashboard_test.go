package prom

import (
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// vllmDashboard is every query of vLLM's older Grafana dashboard
// (examples/observability/prometheus_grafana/grafana.json in
// vllm-project/vllm, formerly examples/online_serving/prometheus_grafana,
// its 27 queries, as written there), by panel. Grafana fills in
// $model_name and $__rate_interval. TestVLLMDashboardsHaveData runs them
// with the current dashboards'.
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

// hostTraffic feeds e what a host serving model publishes: its load, then
// a request every 50 ms with every timing, and its scheduler, KV and prefix
// cache samples, until stop.
func hostTraffic(e *Exporter, model string, stop <-chan struct{}) {
	f := func(v float64) *float64 { return &v }
	e.Observe(events.Event{Type: events.TypeModelLoad, At: time.Now().UnixMilli(), Payload: &events.ModelLoad{
		Model: model, Phase: events.PhaseFinished, Ms: f(2400)}})
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-time.After(50 * time.Millisecond): // the traffic's pace, not synchronisation
		}
		at := time.Now().UnixMilli()
		e.Observe(events.Event{Type: events.TypeRequestFinished, At: at, Payload: &events.RequestFinished{
			Model: model, RequestID: "r", Finish: []events.FinishReason{events.FinishStop, events.FinishLength}[i%2],
			PromptTokens: int64(200 + i%700), CachedPromptTokens: 100, CompletionTokens: int64(20 + i%100),
			QueueMs: f(float64(5 + i%40)), TTFTMs: f(float64(60 + i%90)), PrefillTokensPerSecond: f(4000),
			DecodeTokensPerSecond: f(float64(40 + i%30)), TotalMs: float64(900 + i%600)}})
		e.Observe(events.Event{Type: events.TypeSchedulerSample, At: at, Payload: &events.SchedulerSample{
			Model: model, Active: 1 + i%4, Queued: i % 3, Capacity: 8, TokensPerSecond: 55}})
		capacity := int64(1 << 30)
		e.Observe(events.Event{Type: events.TypeCacheSample, At: at, Payload: &events.CacheSample{
			Model: model, Cache: events.CacheKV, Bytes: int64(i%100+1) << 20, CapacityBytes: &capacity}})
		hits, misses := int64(100*(i+1)), int64(150*(i+1))
		e.Observe(events.Event{Type: events.TypeCacheSample, At: at, Payload: &events.CacheSample{
			Model: model, Cache: events.CachePrefix, Hits: &hits, Misses: &misses}})
	}
}
