package prom

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mlx-bun/mlx-metrics/shared/promtest"
)

// dashboardQuery is one query of a Grafana dashboard: a panel target's
// expression, or a template variable's label_values query (panel "$name").
type dashboardQuery struct{ dashboard, panel, expr string }

// vllmDashboards is every query of vLLM's current Grafana dashboards,
// examples/observability/dashboards/grafana/*.json of vllm-project/vllm
// (Apache-2.0), as the stored versions at commits 0b9faa41 (overview,
// instances), 712d7547 (service status), 5836216b (KV cache), 5961e8d3
// (performance statistics), 030ea52e (query statistics) and 8aed4e52
// (speculative decoding) have them: each panel target's expr, rows
// collapsed or not, and each query variable's label_values, written as the
// dashboard writes them. Grafana fills in the $variables (fill below).
var vllmDashboards = []dashboardQuery{
	// vllm_overview.json
	{"vllm_overview.json", "Requests / s", `sum(rate(vllm:request_success_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval]))`},
	{"vllm_overview.json", "Input tok/s", `sum(rate(vllm:prompt_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval]))`},
	{"vllm_overview.json", "Output tok/s", `sum(rate(vllm:generation_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval]))`},
	{"vllm_overview.json", "5xx ratio", `(sum(rate(http_requests_total{job=~"$job", instance=~"$instance", status="5xx"}[$__rate_interval])) or vector(0)) / (sum(rate(http_requests_total{job=~"$job", instance=~"$instance"}[$__rate_interval])) > 0)`},
	{"vllm_overview.json", "TTFT p95", `histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "ITL p95", `histogram_quantile(0.95, sum by (le) (rate(vllm:inter_token_latency_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "E2E p95", `histogram_quantile(0.95, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "Unreachable", `count(up{job=~"$job"} == 0) or vector(0)`},
	{"vllm_overview.json", "Engines", `count(vllm:num_requests_running{job=~"$job", model_name=~"$model_name", instance=~"$instance"})`},
	{"vllm_overview.json", "Running", `sum(vllm:num_requests_running{job=~"$job", model_name=~"$model_name", instance=~"$instance"})`},
	{"vllm_overview.json", "Waiting", `sum(vllm:num_requests_waiting{job=~"$job", model_name=~"$model_name", instance=~"$instance"})`},
	{"vllm_overview.json", "KV cache", `max(vllm:kv_cache_usage_perc{job=~"$job", model_name=~"$model_name", instance=~"$instance"})`},
	{"vllm_overview.json", "Preemptions", `sum(rate(vllm:num_preemptions_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval]))`},
	{"vllm_overview.json", "Prefix hits", `sum(rate(vllm:prefix_cache_hits_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) / (sum(rate(vllm:prefix_cache_queries_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) > 0)`},
	{"vllm_overview.json", "TTFT SLO", `sum(rate(vllm:time_to_first_token_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", le="$ttft_slo"}[$__rate_interval])) / (sum(rate(vllm:time_to_first_token_seconds_count{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) > 0)`},
	{"vllm_overview.json", "TPOT SLO", `sum(rate(vllm:request_time_per_output_token_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", le="$tpot_slo"}[$__rate_interval])) / (sum(rate(vllm:request_time_per_output_token_seconds_count{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) > 0)`},
	{"vllm_overview.json", "Per-model summary A (engines)", `count by (model_name) (group by (model_name, instance) (last_over_time(vllm:num_requests_running{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__range])))`},
	{"vllm_overview.json", "Per-model summary B (requests/s)", `sum by (model_name) (rate(vllm:request_success_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__range]))`},
	{"vllm_overview.json", "Per-model summary C (output tok/s)", `sum by (model_name) (rate(vllm:generation_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__range]))`},
	{"vllm_overview.json", "Per-model summary D (TTFT p95)", `histogram_quantile(0.95, sum by (le, model_name) (rate(vllm:time_to_first_token_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__range])))`},
	{"vllm_overview.json", "Per-model summary E (ITL p95)", `histogram_quantile(0.95, sum by (le, model_name) (rate(vllm:inter_token_latency_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__range])))`},
	{"vllm_overview.json", "Per-model summary F (E2E p95)", `histogram_quantile(0.95, sum by (le, model_name) (rate(vllm:e2e_request_latency_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__range])))`},
	{"vllm_overview.json", "Per-model summary G (errors)", `sum by (model_name) (rate(vllm:request_success_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", finished_reason="error"}[$__range])) / (sum by (model_name) (rate(vllm:request_success_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__range])) > 0)`},
	{"vllm_overview.json", "Per-model summary H (peak KV cache)", `max by (model_name) (max_over_time(vllm:kv_cache_usage_perc{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__range]))`},
	{"vllm_overview.json", "Per-model summary I (preemptions)", `round(sum by (model_name) (increase(vllm:num_preemptions_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__range])))`},
	{"vllm_overview.json", "Time to first token (TTFT) p50", `histogram_quantile(0.5, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "Time to first token (TTFT) p95", `histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "Time to first token (TTFT) p99", `histogram_quantile(0.99, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "Time to first token (TTFT) mean", `sum(rate(vllm:time_to_first_token_seconds_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) / (sum(rate(vllm:time_to_first_token_seconds_count{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) > 0)`},
	{"vllm_overview.json", "Inter-token latency (ITL) p50", `histogram_quantile(0.5, sum by (le) (rate(vllm:inter_token_latency_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "Inter-token latency (ITL) p95", `histogram_quantile(0.95, sum by (le) (rate(vllm:inter_token_latency_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "Inter-token latency (ITL) p99", `histogram_quantile(0.99, sum by (le) (rate(vllm:inter_token_latency_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "Inter-token latency (ITL) mean", `sum(rate(vllm:inter_token_latency_seconds_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) / (sum(rate(vllm:inter_token_latency_seconds_count{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) > 0)`},
	{"vllm_overview.json", "Time per output token (TPOT) p50", `histogram_quantile(0.5, sum by (le) (rate(vllm:request_time_per_output_token_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "Time per output token (TPOT) p95", `histogram_quantile(0.95, sum by (le) (rate(vllm:request_time_per_output_token_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "Time per output token (TPOT) p99", `histogram_quantile(0.99, sum by (le) (rate(vllm:request_time_per_output_token_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "Time per output token (TPOT) mean", `sum(rate(vllm:request_time_per_output_token_seconds_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) / (sum(rate(vllm:request_time_per_output_token_seconds_count{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) > 0)`},
	{"vllm_overview.json", "End-to-end latency p50", `histogram_quantile(0.5, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "End-to-end latency p95", `histogram_quantile(0.95, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "End-to-end latency p99", `histogram_quantile(0.99, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "End-to-end latency mean", `sum(rate(vllm:e2e_request_latency_seconds_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) / (sum(rate(vllm:e2e_request_latency_seconds_count{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) > 0)`},
	{"vllm_overview.json", "Queue time p50", `histogram_quantile(0.5, sum by (le) (rate(vllm:request_queue_time_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "Queue time p95", `histogram_quantile(0.95, sum by (le) (rate(vllm:request_queue_time_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "Queue time p99", `histogram_quantile(0.99, sum by (le) (rate(vllm:request_queue_time_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "Queue time mean", `sum(rate(vllm:request_queue_time_seconds_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) / (sum(rate(vllm:request_queue_time_seconds_count{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) > 0)`},
	{"vllm_overview.json", "Mean time per request phase queue", `sum(rate(vllm:request_queue_time_seconds_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) / (sum(rate(vllm:request_queue_time_seconds_count{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) > 0)`},
	{"vllm_overview.json", "Mean time per request phase prefill", `sum(rate(vllm:request_prefill_time_seconds_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) / (sum(rate(vllm:request_prefill_time_seconds_count{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) > 0)`},
	{"vllm_overview.json", "Mean time per request phase decode", `sum(rate(vllm:request_decode_time_seconds_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) / (sum(rate(vllm:request_decode_time_seconds_count{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) > 0)`},
	{"vllm_overview.json", "TTFT distribution", `sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval]))`},
	{"vllm_overview.json", "Inter-token latency distribution", `sum by (le) (rate(vllm:inter_token_latency_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval]))`},
	{"vllm_overview.json", "End-to-end latency distribution", `sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval]))`},
	{"vllm_overview.json", "Token throughput input", `sum by (model_name) (rate(vllm:prompt_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval]))`},
	{"vllm_overview.json", "Token throughput output", `sum by (model_name) (rate(vllm:generation_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval]))`},
	{"vllm_overview.json", "Finished requests by reason", `sum by (finished_reason) (rate(vllm:request_success_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval]))`},
	{"vllm_overview.json", "Scheduler queue running", `sum(vllm:num_requests_running{job=~"$job", model_name=~"$model_name", instance=~"$instance"})`},
	{"vllm_overview.json", "Scheduler queue waiting: capacity", `sum(vllm:num_requests_waiting_by_reason{job=~"$job", model_name=~"$model_name", instance=~"$instance", reason="capacity"})`},
	{"vllm_overview.json", "Scheduler queue waiting: deferred", `sum(vllm:num_requests_waiting_by_reason{job=~"$job", model_name=~"$model_name", instance=~"$instance", reason="deferred"})`},
	{"vllm_overview.json", "KV cache usage max", `max(vllm:kv_cache_usage_perc{job=~"$job", model_name=~"$model_name", instance=~"$instance"})`},
	{"vllm_overview.json", "KV cache usage mean", `avg(vllm:kv_cache_usage_perc{job=~"$job", model_name=~"$model_name", instance=~"$instance"})`},
	{"vllm_overview.json", "KV cache usage min", `min(vllm:kv_cache_usage_perc{job=~"$job", model_name=~"$model_name", instance=~"$instance"})`},
	{"vllm_overview.json", "Preemptions / s", `sum(rate(vllm:num_preemptions_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval]))`},
	{"vllm_overview.json", "Tokens per engine step p50", `histogram_quantile(0.5, sum by (le) (rate(vllm:iteration_tokens_total_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "Tokens per engine step p99", `histogram_quantile(0.99, sum by (le) (rate(vllm:iteration_tokens_total_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "Tokens per engine step mean", `sum(rate(vllm:iteration_tokens_total_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) / (sum(rate(vllm:iteration_tokens_total_count{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) > 0)`},
	{"vllm_overview.json", "Cache hit rates prefix cache", `sum(rate(vllm:prefix_cache_hits_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) / (sum(rate(vllm:prefix_cache_queries_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) > 0)`},
	{"vllm_overview.json", "Cache hit rates external prefix cache", `sum(rate(vllm:external_prefix_cache_hits_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) / (sum(rate(vllm:external_prefix_cache_queries_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) > 0)`},
	{"vllm_overview.json", "Cache hit rates multimodal cache", `sum(rate(vllm:mm_cache_hits_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) / (sum(rate(vllm:mm_cache_queries_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) > 0)`},
	{"vllm_overview.json", "Prompt tokens by source Computed", `sum(rate(vllm:prompt_tokens_by_source_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", source="local_compute"}[$__rate_interval]))`},
	{"vllm_overview.json", "Prompt tokens by source Prefix cache hit", `sum(rate(vllm:prompt_tokens_by_source_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", source="local_cache_hit"}[$__rate_interval]))`},
	{"vllm_overview.json", "Prompt tokens by source KV transfer", `sum(rate(vllm:prompt_tokens_by_source_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", source="external_kv_transfer"}[$__rate_interval]))`},
	{"vllm_overview.json", "Prompt length p50", `histogram_quantile(0.5, sum by (le) (rate(vllm:request_prompt_tokens_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "Prompt length p95", `histogram_quantile(0.95, sum by (le) (rate(vllm:request_prompt_tokens_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "Prompt length p99", `histogram_quantile(0.99, sum by (le) (rate(vllm:request_prompt_tokens_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "Prompt length mean", `sum(rate(vllm:request_prompt_tokens_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) / (sum(rate(vllm:request_prompt_tokens_count{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) > 0)`},
	{"vllm_overview.json", "Output length p50", `histogram_quantile(0.5, sum by (le) (rate(vllm:request_generation_tokens_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "Output length p95", `histogram_quantile(0.95, sum by (le) (rate(vllm:request_generation_tokens_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "Output length p99", `histogram_quantile(0.99, sum by (le) (rate(vllm:request_generation_tokens_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])))`},
	{"vllm_overview.json", "Output length mean", `sum(rate(vllm:request_generation_tokens_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) / (sum(rate(vllm:request_generation_tokens_count{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) > 0)`},
	{"vllm_overview.json", "Finish reason share", `sum by (finished_reason) (rate(vllm:request_success_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) / ignoring (finished_reason) group_left () (sum(rate(vllm:request_success_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__rate_interval])) > 0)`},
	{"vllm_overview.json", "Prompt length distribution", `sum by (le) (increase(vllm:request_prompt_tokens_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__range])) / on () group_left () (sum(increase(vllm:request_prompt_tokens_count{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__range])) > 0)`},
	{"vllm_overview.json", "Output length distribution", `sum by (le) (increase(vllm:request_generation_tokens_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__range])) / on () group_left () (sum(increase(vllm:request_generation_tokens_count{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[$__range])) > 0)`},
	{"vllm_overview.json", "HTTP requests by status", `sum by (status) (rate(http_requests_total{job=~"$job", instance=~"$instance"}[$__rate_interval]))`},
	{"vllm_overview.json", "HTTP requests by endpoint", `sum by (handler) (rate(http_requests_total{job=~"$job", instance=~"$instance"}[$__rate_interval]))`},
	{"vllm_overview.json", "HTTP mean duration by endpoint", `sum by (handler) (rate(http_request_duration_seconds_sum{job=~"$job", instance=~"$instance"}[$__rate_interval])) / (sum by (handler) (rate(http_request_duration_seconds_count{job=~"$job", instance=~"$instance"}[$__rate_interval])) > 0)`},
	{"vllm_overview.json", "$job", `label_values(vllm:num_requests_running, job)`},
	{"vllm_overview.json", "$model_name", `label_values(vllm:num_requests_running{job=~"$job"}, model_name)`},
	{"vllm_overview.json", "$instance", `label_values(vllm:num_requests_running{job=~"$job", model_name=~"$model_name"}, instance)`},
	// vllm_service_status.json
	{"vllm_service_status.json", "Status", `(2 - (max(vllm:engine_sleep_state{job=~"$job", model_name=~"$model_name", instance=~"$instance", sleep_state="awake"}) == bool 0)) or vector(0)`},
	{"vllm_service_status.json", "Response time", `(histogram_quantile(0.5, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[5m])))) and on () count(vllm:num_requests_running{job=~"$job", model_name=~"$model_name", instance=~"$instance"})`},
	{"vllm_service_status.json", "Output speed", `(sum(rate(vllm:generation_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[5m])) / (sum(avg_over_time(vllm:num_requests_running{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[5m])) > 0)) and on () count(vllm:num_requests_running{job=~"$job", model_name=~"$model_name", instance=~"$instance"})`},
	{"vllm_service_status.json", "Success rate", `(1 - (sum(rate(vllm:request_success_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", finished_reason="error"}[5m])) / (sum(rate(vllm:request_success_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[5m])) > 0))) and on () count(vllm:num_requests_running{job=~"$job", model_name=~"$model_name", instance=~"$instance"})`},
	{"vllm_service_status.json", "Requests / min", `(60 * sum(rate(vllm:request_success_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[5m]))) and on () count(vllm:num_requests_running{job=~"$job", model_name=~"$model_name", instance=~"$instance"})`},
	{"vllm_service_status.json", "Status over the selected time range", `(2 - (max(vllm:engine_sleep_state{job=~"$job", model_name=~"$model_name", instance=~"$instance", sleep_state="awake"}) == bool 0)) or vector(0)`},
	{"vllm_service_status.json", "Response time over the selected time range", `histogram_quantile(0.5, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[5m])))`},
	{"vllm_service_status.json", "Output speed over the selected time range", `sum(rate(vllm:generation_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[5m])) / (sum(avg_over_time(vllm:num_requests_running{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[5m])) > 0)`},
	{"vllm_service_status.json", "Success rate over the selected time range", `1 - (sum(rate(vllm:request_success_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", finished_reason="error"}[5m])) / (sum(rate(vllm:request_success_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[5m])) > 0))`},
	{"vllm_service_status.json", "Requests per minute over the selected time range", `60 * sum(rate(vllm:request_success_total{job=~"$job", model_name=~"$model_name", instance=~"$instance"}[5m]))`},
	{"vllm_service_status.json", "$job", `label_values(vllm:num_requests_running, job)`},
	{"vllm_service_status.json", "$model_name", `label_values(vllm:num_requests_running{job=~"$job"}, model_name)`},
	{"vllm_service_status.json", "$instance", `label_values(vllm:num_requests_running{job=~"$job", model_name=~"$model_name"}, instance)`},
	// vllm_kv_cache.json
	{"vllm_kv_cache.json", "Max KV cache usage", `max(vllm:kv_cache_usage_perc{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"})`},
	{"vllm_kv_cache.json", "Mean KV cache usage", `avg(vllm:kv_cache_usage_perc{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"})`},
	{"vllm_kv_cache.json", "Prefix cache hit rate", `sum(rate(vllm:prefix_cache_hits_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:prefix_cache_queries_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_kv_cache.json", "Cached prompt tokens", `sum(rate(vllm:prompt_tokens_cached_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:prompt_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_kv_cache.json", "Preemptions / s", `sum(rate(vllm:num_preemptions_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_kv_cache.json", "Waiting for capacity", `sum(vllm:num_requests_waiting_by_reason{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine", reason="capacity"})`},
	{"vllm_kv_cache.json", "KV cache usage by engine", `max by (instance, engine) (vllm:kv_cache_usage_perc{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"})`},
	{"vllm_kv_cache.json", "Scheduler queue running", `sum(vllm:num_requests_running{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"})`},
	{"vllm_kv_cache.json", "Scheduler queue waiting: capacity", `sum(vllm:num_requests_waiting_by_reason{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine", reason="capacity"})`},
	{"vllm_kv_cache.json", "Scheduler queue waiting: deferred", `sum(vllm:num_requests_waiting_by_reason{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine", reason="deferred"})`},
	{"vllm_kv_cache.json", "Preemptions / s by engine", `sum by (instance, engine) (rate(vllm:num_preemptions_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_kv_cache.json", "Prompt tokens by source Computed", `sum(rate(vllm:prompt_tokens_by_source_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine", source="local_compute"}[$__rate_interval]))`},
	{"vllm_kv_cache.json", "Prompt tokens by source Prefix cache hit", `sum(rate(vllm:prompt_tokens_by_source_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine", source="local_cache_hit"}[$__rate_interval]))`},
	{"vllm_kv_cache.json", "Prompt tokens by source KV transfer", `sum(rate(vllm:prompt_tokens_by_source_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine", source="external_kv_transfer"}[$__rate_interval]))`},
	{"vllm_kv_cache.json", "Prefix cache hit rate by engine", `sum by (instance, engine) (rate(vllm:prefix_cache_hits_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum by (instance, engine) (rate(vllm:prefix_cache_queries_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_kv_cache.json", "Cached prompt tokens by tier", `sum by (source) (rate(vllm:prompt_tokens_cached_by_source_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_kv_cache.json", "Prompt and computed tokens per request prompt tokens", `sum(rate(vllm:request_prompt_tokens_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:request_prompt_tokens_count{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_kv_cache.json", "Prompt and computed tokens per request computed tokens", `sum(rate(vllm:request_prefill_kv_computed_tokens_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:request_prefill_kv_computed_tokens_count{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_kv_cache.json", "Cache hit rates prefix cache", `sum(rate(vllm:prefix_cache_hits_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:prefix_cache_queries_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_kv_cache.json", "Cache hit rates external prefix cache", `sum(rate(vllm:external_prefix_cache_hits_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:external_prefix_cache_queries_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_kv_cache.json", "Cache hit rates multimodal cache", `sum(rate(vllm:mm_cache_hits_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:mm_cache_queries_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_kv_cache.json", "Block lifetime p50", `histogram_quantile(0.5, sum by (le) (rate(vllm:kv_block_lifetime_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_kv_cache.json", "Block lifetime p95", `histogram_quantile(0.95, sum by (le) (rate(vllm:kv_block_lifetime_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_kv_cache.json", "Block lifetime p99", `histogram_quantile(0.99, sum by (le) (rate(vllm:kv_block_lifetime_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_kv_cache.json", "Block lifetime mean", `sum(rate(vllm:kv_block_lifetime_seconds_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:kv_block_lifetime_seconds_count{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_kv_cache.json", "Idle time before eviction p50", `histogram_quantile(0.5, sum by (le) (rate(vllm:kv_block_idle_before_evict_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_kv_cache.json", "Idle time before eviction p95", `histogram_quantile(0.95, sum by (le) (rate(vllm:kv_block_idle_before_evict_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_kv_cache.json", "Idle time before eviction p99", `histogram_quantile(0.99, sum by (le) (rate(vllm:kv_block_idle_before_evict_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_kv_cache.json", "Idle time before eviction mean", `sum(rate(vllm:kv_block_idle_before_evict_seconds_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:kv_block_idle_before_evict_seconds_count{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_kv_cache.json", "Block reuse gap p50", `histogram_quantile(0.5, sum by (le) (rate(vllm:kv_block_reuse_gap_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_kv_cache.json", "Block reuse gap p95", `histogram_quantile(0.95, sum by (le) (rate(vllm:kv_block_reuse_gap_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_kv_cache.json", "Block reuse gap p99", `histogram_quantile(0.99, sum by (le) (rate(vllm:kv_block_reuse_gap_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_kv_cache.json", "Block reuse gap mean", `sum(rate(vllm:kv_block_reuse_gap_seconds_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:kv_block_reuse_gap_seconds_count{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_kv_cache.json", "External prefix cache hit rate", `sum(rate(vllm:external_prefix_cache_hits_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:external_prefix_cache_queries_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_kv_cache.json", "Requests waiting on KV loads", `sum by (stage) (vllm:num_requests_kv_fetch_by_stage{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"})`},
	{"vllm_kv_cache.json", "Prompt tokens loaded via KV transfer", `sum(rate(vllm:prompt_tokens_by_source_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine", source="external_kv_transfer"}[$__rate_interval]))`},
	{"vllm_kv_cache.json", "Transfer duration p50", `histogram_quantile(0.5, sum by (le) (rate(vllm:nixl_xfer_time_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_kv_cache.json", "Transfer duration p95", `histogram_quantile(0.95, sum by (le) (rate(vllm:nixl_xfer_time_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_kv_cache.json", "Transfer duration p99", `histogram_quantile(0.99, sum by (le) (rate(vllm:nixl_xfer_time_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_kv_cache.json", "Transfer duration mean", `sum(rate(vllm:nixl_xfer_time_seconds_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:nixl_xfer_time_seconds_count{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_kv_cache.json", "Transfer throughput aggregate", `sum(rate(vllm:nixl_bytes_transferred_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_kv_cache.json", "Transfer throughput per transfer", `sum(rate(vllm:nixl_bytes_transferred_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:nixl_xfer_time_seconds_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_kv_cache.json", "Transfers / s", `sum(rate(vllm:nixl_xfer_time_seconds_count{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_kv_cache.json", "Bytes per transfer p50", `histogram_quantile(0.5, sum by (le) (rate(vllm:nixl_bytes_transferred_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_kv_cache.json", "Bytes per transfer p95", `histogram_quantile(0.95, sum by (le) (rate(vllm:nixl_bytes_transferred_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_kv_cache.json", "Bytes per transfer p99", `histogram_quantile(0.99, sum by (le) (rate(vllm:nixl_bytes_transferred_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_kv_cache.json", "Bytes per transfer mean", `sum(rate(vllm:nixl_bytes_transferred_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:nixl_bytes_transferred_count{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_kv_cache.json", "Transfer post time p50", `histogram_quantile(0.5, sum by (le) (rate(vllm:nixl_post_time_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_kv_cache.json", "Transfer post time p95", `histogram_quantile(0.95, sum by (le) (rate(vllm:nixl_post_time_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_kv_cache.json", "Transfer post time p99", `histogram_quantile(0.99, sum by (le) (rate(vllm:nixl_post_time_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_kv_cache.json", "Transfer post time mean", `sum(rate(vllm:nixl_post_time_seconds_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:nixl_post_time_seconds_count{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_kv_cache.json", "Descriptors per transfer p50", `histogram_quantile(0.5, sum by (le) (rate(vllm:nixl_num_descriptors_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_kv_cache.json", "Descriptors per transfer p95", `histogram_quantile(0.95, sum by (le) (rate(vllm:nixl_num_descriptors_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_kv_cache.json", "Descriptors per transfer p99", `histogram_quantile(0.99, sum by (le) (rate(vllm:nixl_num_descriptors_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_kv_cache.json", "Descriptors per transfer mean", `sum(rate(vllm:nixl_num_descriptors_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:nixl_num_descriptors_count{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_kv_cache.json", "Transfer failures / s failed transfers", `sum(rate(vllm:nixl_num_failed_transfers_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_kv_cache.json", "Transfer failures / s failed notifications", `sum(rate(vllm:nixl_num_failed_notifications_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_kv_cache.json", "Transfer failures / s expired KV", `sum(rate(vllm:nixl_num_kv_expired_reqs_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_kv_cache.json", "Transfer failures / s late notifications", `sum(rate(vllm:nixl_num_notifications_after_expiry_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_kv_cache.json", "Offload throughput load", `sum(rate(vllm:kv_offload_load_bytes_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_kv_cache.json", "Offload throughput store", `sum(rate(vllm:kv_offload_store_bytes_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_kv_cache.json", "Offload transfer bandwidth load", `sum(rate(vllm:kv_offload_load_bytes_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:kv_offload_load_time_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_kv_cache.json", "Offload transfer bandwidth store", `sum(rate(vllm:kv_offload_store_bytes_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:kv_offload_store_time_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_kv_cache.json", "Mean offload transfer size load", `sum(rate(vllm:kv_offload_load_size_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:kv_offload_load_size_count{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_kv_cache.json", "Mean offload transfer size store", `sum(rate(vllm:kv_offload_store_size_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:kv_offload_store_size_count{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_kv_cache.json", "Offload lookup latency p99 sync", `histogram_quantile(0.99, sum by (le) (rate(vllm:kv_offload_lookup_sync_delay_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_kv_cache.json", "Offload lookup latency p99 async", `histogram_quantile(0.99, sum by (le) (rate(vllm:kv_offload_lookup_async_delay_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_kv_cache.json", "CPU offload buffer usage total", `max(vllm:kv_offload_cpu_cache_usage_perc{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"})`},
	{"vllm_kv_cache.json", "CPU offload buffer usage stores", `max(vllm:kv_offload_cpu_cache_write_usage_perc{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"})`},
	{"vllm_kv_cache.json", "CPU offload buffer usage loads", `max(vllm:kv_offload_cpu_cache_read_usage_perc{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"})`},
	{"vllm_kv_cache.json", "Failed and skipped stores / s allocation failures", `sum(rate(vllm:kv_offload_allocation_failure_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_kv_cache.json", "Failed and skipped stores / s skipped", `sum(rate(vllm:kv_offload_stores_skipped_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_kv_cache.json", "Store admission outcomes", `sum by (outcome) (rate(vllm:simple_kv_offload_save_outcomes_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_kv_cache.json", "Blocks restored from offload / s", `sum(rate(vllm:simple_kv_offload_load_blocks_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_kv_cache.json", "Offload pool blocks pinned", `sum(vllm:simple_kv_offload_used_blocks{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"})`},
	{"vllm_kv_cache.json", "Offload pool blocks pending stores", `sum(vllm:simple_kv_offload_pending_store_blocks{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"})`},
	{"vllm_kv_cache.json", "$job", `label_values(vllm:num_requests_running, job)`},
	{"vllm_kv_cache.json", "$model_name", `label_values(vllm:num_requests_running{job=~"$job"}, model_name)`},
	{"vllm_kv_cache.json", "$instance", `label_values(vllm:num_requests_running{job=~"$job", model_name=~"$model_name"}, instance)`},
	{"vllm_kv_cache.json", "$engine", `label_values(vllm:num_requests_running{job=~"$job", model_name=~"$model_name", instance=~"$instance"}, engine)`},
	// vllm_instances.json
	{"vllm_instances.json", "Instances A (engines)", `count by (model_name, instance) (vllm:num_requests_running{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"})`},
	{"vllm_instances.json", "Instances B (running)", `sum by (model_name, instance) (vllm:num_requests_running{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"})`},
	{"vllm_instances.json", "Instances C (waiting)", `sum by (model_name, instance) (vllm:num_requests_waiting{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"})`},
	{"vllm_instances.json", "Instances D (KV cache)", `max by (model_name, instance) (vllm:kv_cache_usage_perc{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"})`},
	{"vllm_instances.json", "Instances E (req/s)", `sum by (model_name, instance) (rate(vllm:request_success_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[5m]))`},
	{"vllm_instances.json", "Instances F (output tok/s)", `sum by (model_name, instance) (rate(vllm:generation_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[5m]))`},
	{"vllm_instances.json", "Instances G (TTFT p95)", `histogram_quantile(0.95, sum by (le, model_name, instance) (rate(vllm:time_to_first_token_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[5m])))`},
	{"vllm_instances.json", "Instances H (ITL p95)", `histogram_quantile(0.95, sum by (le, model_name, instance) (rate(vllm:inter_token_latency_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[5m])))`},
	{"vllm_instances.json", "Instances I (preempt/s)", `sum by (model_name, instance) (rate(vllm:num_preemptions_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[5m]))`},
	{"vllm_instances.json", "Instances J (uptime)", `max by (model_name, instance) ((time() - process_start_time_seconds{job=~"$job", instance=~"$instance"}) * on (job, instance) group_left (model_name) group by (job, instance, model_name) (vllm:num_requests_running{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}))`},
	{"vllm_instances.json", "Running requests", `sum by (instance, engine) (vllm:num_requests_running{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"})`},
	{"vllm_instances.json", "Waiting requests", `sum by (instance, engine) (vllm:num_requests_waiting{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"})`},
	{"vllm_instances.json", "KV cache usage", `max by (instance, engine) (vllm:kv_cache_usage_perc{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"})`},
	{"vllm_instances.json", "Requests / s", `sum by (instance) (rate(vllm:request_success_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_instances.json", "Input tokens / s", `sum by (instance, engine) (rate(vllm:prompt_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_instances.json", "Output tokens / s", `sum by (instance, engine) (rate(vllm:generation_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_instances.json", "TTFT p95", `histogram_quantile(0.95, sum by (le, instance) (rate(vllm:time_to_first_token_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_instances.json", "Inter-token latency p95", `histogram_quantile(0.95, sum by (le, instance) (rate(vllm:inter_token_latency_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_instances.json", "E2E latency p95", `histogram_quantile(0.95, sum by (le, instance) (rate(vllm:e2e_request_latency_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_instances.json", "Mean queue time", `sum by (instance) (rate(vllm:request_queue_time_seconds_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum by (instance) (rate(vllm:request_queue_time_seconds_count{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_instances.json", "Engine steps / s", `sum by (instance, engine) (rate(vllm:iteration_tokens_total_count{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_instances.json", "Mean tokens per engine step", `sum by (instance, engine) (rate(vllm:iteration_tokens_total_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum by (instance, engine) (rate(vllm:iteration_tokens_total_count{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_instances.json", "Preemptions / s", `sum by (instance, engine) (rate(vllm:num_preemptions_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_instances.json", "Waiting requests by reason", `sum by (instance, engine, reason) (vllm:num_requests_waiting_by_reason{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"})`},
	{"vllm_instances.json", "Prefix cache hit rate", `sum by (instance, engine) (rate(vllm:prefix_cache_hits_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum by (instance, engine) (rate(vllm:prefix_cache_queries_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_instances.json", "CPU usage", `sum by (instance) (rate(process_cpu_seconds_total{job=~"$job", instance=~"$instance"}[$__rate_interval]))`},
	{"vllm_instances.json", "Resident memory", `sum by (instance) (process_resident_memory_bytes{job=~"$job", instance=~"$instance"})`},
	{"vllm_instances.json", "Open file descriptors", `sum by (instance) (process_open_fds{job=~"$job", instance=~"$instance"}) / sum by (instance) (process_max_fds{job=~"$job", instance=~"$instance"})`},
	{"vllm_instances.json", "Cache configuration", `vllm:cache_config_info{job=~"$job", instance=~"$instance", engine=~"$engine"}`},
	{"vllm_instances.json", "LoRA adapters", `topk by (job, instance) (1, vllm:lora_requests_info{job=~"$job", instance=~"$instance"})`},
	{"vllm_instances.json", "Engine sleep state", `(1 - max by (instance, engine) (vllm:engine_sleep_state{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine", sleep_state="awake"})) * (1 + max by (instance, engine) (vllm:engine_sleep_state{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine", sleep_state="discard_all"}))`},
	{"vllm_instances.json", "Sleep mode and weight update operations A (count)", `sum by (operation) (last_over_time(vllm:sleep_mode_operation_duration_seconds_count{job=~"$job", instance=~"$instance"}[$__range])) or sum by (operation) (last_over_time(vllm:rl_weight_update_operation_duration_seconds_count{job=~"$job", instance=~"$instance"}[$__range]))`},
	{"vllm_instances.json", "Sleep mode and weight update operations B (mean duration)", `sum by (operation) (last_over_time(vllm:sleep_mode_operation_duration_seconds_sum{job=~"$job", instance=~"$instance"}[$__range])) / (sum by (operation) (last_over_time(vllm:sleep_mode_operation_duration_seconds_count{job=~"$job", instance=~"$instance"}[$__range])) > 0) or sum by (operation) (last_over_time(vllm:rl_weight_update_operation_duration_seconds_sum{job=~"$job", instance=~"$instance"}[$__range])) / (sum by (operation) (last_over_time(vllm:rl_weight_update_operation_duration_seconds_count{job=~"$job", instance=~"$instance"}[$__range])) > 0)`},
	{"vllm_instances.json", "Sleep mode and weight update operations C (p99 duration)", `histogram_quantile(0.99, sum by (le, operation) (last_over_time(vllm:sleep_mode_operation_duration_seconds_bucket{job=~"$job", instance=~"$instance"}[$__range]))) or histogram_quantile(0.99, sum by (le, operation) (last_over_time(vllm:rl_weight_update_operation_duration_seconds_bucket{job=~"$job", instance=~"$instance"}[$__range])))`},
	{"vllm_instances.json", "Estimated compute per GPU", `sum by (instance, engine) (rate(vllm:estimated_flops_per_gpu_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_instances.json", "Estimated memory traffic per GPU", `sum by (instance, engine) (rate(vllm:estimated_read_bytes_per_gpu_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) + sum by (instance, engine) (rate(vllm:estimated_write_bytes_per_gpu_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_instances.json", "$job", `label_values(vllm:num_requests_running, job)`},
	{"vllm_instances.json", "$model_name", `label_values(vllm:num_requests_running{job=~"$job"}, model_name)`},
	{"vllm_instances.json", "$instance", `label_values(vllm:num_requests_running{job=~"$job", model_name=~"$model_name"}, instance)`},
	{"vllm_instances.json", "$engine", `label_values(vllm:num_requests_running{job=~"$job", model_name=~"$model_name", instance=~"$instance"}, engine)`},
	// performance_statistics.json
	{"performance_statistics.json", "E2E Latency over Time", `rate(vllm:e2e_request_latency_seconds_sum[$__rate_interval]) / rate(vllm:e2e_request_latency_seconds_count[$__rate_interval])`},
	{"performance_statistics.json", "E2E Latency (P99)", `histogram_quantile(0.99, sum by(le) (rate(vllm:e2e_request_latency_seconds_bucket[$__range])))`},
	{"performance_statistics.json", "E2E Latency (P90)", `histogram_quantile(0.90, sum by(le) (rate(vllm:e2e_request_latency_seconds_bucket[$__range])))`},
	{"performance_statistics.json", "E2E Latency (Avg)", `(sum(increase(vllm:e2e_request_latency_seconds_sum[$__range])) / sum(increase(vllm:e2e_request_latency_seconds_count[$__range])))`},
	{"performance_statistics.json", "E2E Latency (P50)", `histogram_quantile(0.50, sum by(le) (rate(vllm:e2e_request_latency_seconds_bucket[$__range])))`},
	{"performance_statistics.json", "TTFT Over Time", `rate(vllm:time_to_first_token_seconds_sum[$__rate_interval]) / rate(vllm:time_to_first_token_seconds_count[$__rate_interval])`},
	{"performance_statistics.json", "TTFT (P99)", `histogram_quantile(0.99, sum by(le) (rate(vllm:time_to_first_token_seconds_bucket[$__range])))`},
	{"performance_statistics.json", "TTFT (P90)", `histogram_quantile(0.90, sum by(le) (rate(vllm:time_to_first_token_seconds_bucket[$__range])))`},
	{"performance_statistics.json", "TTFT (Avg)", `(sum(increase(vllm:time_to_first_token_seconds_sum[$__range])) / sum(increase(vllm:time_to_first_token_seconds_count[$__range])))`},
	{"performance_statistics.json", "TTFT (P50)", `histogram_quantile(0.50, sum by(le) (rate(vllm:time_to_first_token_seconds_bucket[$__range])))`},
	{"performance_statistics.json", "ITL Over Time avg", `rate(vllm:inter_token_latency_seconds_sum[$__rate_interval]) / rate(vllm:inter_token_latency_seconds_count[$__rate_interval])`},
	{"performance_statistics.json", "ITL Over Time p50", `histogram_quantile(0.50, sum by(le) (rate(vllm:inter_token_latency_seconds_bucket[$__rate_interval])))`},
	{"performance_statistics.json", "ITL Over Time p90", `histogram_quantile(0.90, sum by(le) (rate(vllm:inter_token_latency_seconds_bucket[$__rate_interval])))`},
	{"performance_statistics.json", "ITL Over Time p99", `histogram_quantile(0.99, sum by(le) (rate(vllm:inter_token_latency_seconds_bucket[$__rate_interval])))`},
	{"performance_statistics.json", "ITL (P90)", `histogram_quantile(0.90, sum by(le) (rate(vllm:inter_token_latency_seconds_bucket[$__range])))`},
	{"performance_statistics.json", "ITL (P99)", `histogram_quantile(0.99, sum by(le) (rate(vllm:inter_token_latency_seconds_bucket[$__range])))`},
	{"performance_statistics.json", "ITL (Avg)", `(sum(increase(vllm:inter_token_latency_seconds_sum[$__range])) / sum(increase(vllm:inter_token_latency_seconds_count[$__range])))`},
	{"performance_statistics.json", "ITL (P50)", `histogram_quantile(0.50, sum by(le) (rate(vllm:inter_token_latency_seconds_bucket[$__range])))`},
	{"performance_statistics.json", "TPS Over Time generation", `rate(vllm:generation_tokens_total[$__rate_interval])`},
	{"performance_statistics.json", "TPS Over Time prompt", `rate(vllm:prompt_tokens_total[$__rate_interval])`},
	{"performance_statistics.json", "TPS Over Time overall iteration", `rate(vllm:iteration_tokens_total_count[$__rate_interval])`},
	{"performance_statistics.json", "$Deployment_id", `label_values(vllm:generation_tokens_total,model_name)`},
	// query_statistics.json
	{"query_statistics.json", "Successful Requests Over Time", `sum by (model_name) (
  rate(vllm:request_success_total{model_name=~"$Deployment_id"}[$__rate_interval])
)`},
	{"query_statistics.json", "Requests Avg Rate", `sum(rate(vllm:request_success_total{model_name=~"$Deployment_id"}[$__rate_interval]))`},
	{"query_statistics.json", "p50 Latency", `histogram_quantile(0.50, sum by(le, model_name) (rate(vllm:e2e_request_latency_seconds_bucket{model_name=~"$Deployment_id"}[$__rate_interval])))`},
	{"query_statistics.json", "p90 Latency", `histogram_quantile(0.90, sum by(le, model_name) (rate(vllm:e2e_request_latency_seconds_bucket{model_name=~"$Deployment_id"}[$__rate_interval])))`},
	{"query_statistics.json", "p99 Latency", `histogram_quantile(0.99, sum by(le, model_name) (rate(vllm:e2e_request_latency_seconds_bucket{model_name=~"$Deployment_id"}[$__rate_interval])))`},
	{"query_statistics.json", "Input Token Size Distribution", `sum by (le, model_name) (rate(vllm:request_prompt_tokens_bucket{model_name=~"$Deployment_id"}[$__rate_interval]))`},
	{"query_statistics.json", "Input Token Size p90", `histogram_quantile(0.90, sum by(le, model_name) (rate(vllm:request_prompt_tokens_bucket{model_name=~"$Deployment_id"}[$__rate_interval])))`},
	{"query_statistics.json", "Input Token Size p50", `histogram_quantile(0.50, sum by(le, model_name) (rate(vllm:request_prompt_tokens_bucket{model_name=~"$Deployment_id"}[$__rate_interval])))`},
	{"query_statistics.json", "Input Token Size Avg", `sum(rate(vllm:prompt_tokens_total{model_name=~"$Deployment_id"}[$__rate_interval]))
/
sum(rate(vllm:request_success_total{model_name=~"$Deployment_id"}[$__rate_interval]))`},
	{"query_statistics.json", "Input Token Size p99", `histogram_quantile(0.99, sum by(le, model_name) (rate(vllm:request_prompt_tokens_bucket{model_name=~"$Deployment_id"}[$__rate_interval])))`},
	{"query_statistics.json", "Input Tokens Over Time", `sum by (model_name) (rate(vllm:prompt_tokens_total{model_name=~"$Deployment_id"}[$__rate_interval]))`},
	{"query_statistics.json", "Input Tokens/Sec Avg", `sum(rate(vllm:prompt_tokens_total{model_name=~"$Deployment_id"}[$__rate_interval]))`},
	{"query_statistics.json", "Output Tokens Over Time", `sum by (model_name) (rate(vllm:generation_tokens_total{model_name=~"$Deployment_id"}[$__rate_interval]))`},
	{"query_statistics.json", "Output Tokens/Sec Avg", `sum(rate(vllm:generation_tokens_total{model_name=~"$Deployment_id"}[$__rate_interval]))`},
	{"query_statistics.json", "$Deployment_id", `label_values(vllm:request_success_total,model_name)`},
	// vllm_speculative_decoding.json
	{"vllm_speculative_decoding.json", "Draft acceptance rate (stat)", `sum(rate(vllm:spec_decode_num_accepted_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:spec_decode_num_draft_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_speculative_decoding.json", "Acceptance length", `1 + sum(rate(vllm:spec_decode_num_accepted_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:spec_decode_num_drafts_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_speculative_decoding.json", "Accepted tokens / s", `sum(rate(vllm:spec_decode_num_accepted_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_speculative_decoding.json", "Draft tokens / s", `sum(rate(vllm:spec_decode_num_draft_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_speculative_decoding.json", "Drafts / s", `sum(rate(vllm:spec_decode_num_drafts_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_speculative_decoding.json", "Output from drafts", `sum(rate(vllm:spec_decode_num_accepted_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:generation_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_speculative_decoding.json", "Draft acceptance rate", `sum by (model_name) (rate(vllm:spec_decode_num_accepted_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum by (model_name) (rate(vllm:spec_decode_num_draft_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_speculative_decoding.json", "Mean acceptance length", `1 + sum by (model_name) (rate(vllm:spec_decode_num_accepted_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum by (model_name) (rate(vllm:spec_decode_num_drafts_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_speculative_decoding.json", "Acceptance rate by draft position", `sum by (position) (rate(vllm:spec_decode_num_accepted_tokens_per_pos_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / on () group_left () (sum(rate(vllm:spec_decode_num_drafts_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_speculative_decoding.json", "Draft acceptance rate by engine", `sum by (instance, engine) (rate(vllm:spec_decode_num_accepted_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum by (instance, engine) (rate(vllm:spec_decode_num_draft_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_speculative_decoding.json", "Draft tokens / s proposed", `sum(rate(vllm:spec_decode_num_draft_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_speculative_decoding.json", "Draft tokens / s accepted", `sum(rate(vllm:spec_decode_num_accepted_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_speculative_decoding.json", "Draft tokens / s rejected", `sum(rate(vllm:spec_decode_num_draft_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) - sum(rate(vllm:spec_decode_num_accepted_tokens_total{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval]))`},
	{"vllm_speculative_decoding.json", "Inter-token latency p50", `histogram_quantile(0.5, sum by (le) (rate(vllm:inter_token_latency_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_speculative_decoding.json", "Inter-token latency p95", `histogram_quantile(0.95, sum by (le) (rate(vllm:inter_token_latency_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_speculative_decoding.json", "Inter-token latency p99", `histogram_quantile(0.99, sum by (le) (rate(vllm:inter_token_latency_seconds_bucket{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])))`},
	{"vllm_speculative_decoding.json", "Inter-token latency mean", `sum(rate(vllm:inter_token_latency_seconds_sum{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) / (sum(rate(vllm:inter_token_latency_seconds_count{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}[$__rate_interval])) > 0)`},
	{"vllm_speculative_decoding.json", "$job", `label_values(vllm:num_requests_running, job)`},
	{"vllm_speculative_decoding.json", "$model_name", `label_values(vllm:num_requests_running{job=~"$job"}, model_name)`},
	{"vllm_speculative_decoding.json", "$instance", `label_values(vllm:num_requests_running{job=~"$job", model_name=~"$model_name"}, instance)`},
	{"vllm_speculative_decoding.json", "$engine", `label_values(vllm:num_requests_running{job=~"$job", model_name=~"$model_name", instance=~"$instance"}, engine)`},
}

// notExported are the families vLLM's dashboards query that this module
// does not export, and why (docs/export.md lists them). A name ending in
// "*" stands for every family it begins. A query reading one of them is
// expected to answer nothing; one that answers is a family now exported,
// to be taken off the list.
var notExported = map[string]string{
	"vllm:num_preemptions_total":                       "the host reports no preemption",
	"vllm:iteration_tokens_total":                      "the host reports no engine step or its tokens",
	"vllm:cache_config_info":                           "the events carry no cache configuration",
	"vllm:lora_requests_info":                          "the host serves no LoRA adapters through the events",
	"vllm:mm_cache_*":                                  "no multimodal cache is reported",
	"vllm:external_prefix_cache_*":                     "no KV connector: an MLX host shares no cache with other instances",
	"vllm:prompt_tokens_cached_by_source_total":        "the events do not say which memory tier held a cached prompt token",
	"vllm:kv_block_*":                                  "the host reports no KV block residency",
	"vllm:num_requests_kv_fetch_by_stage":              "no KV connector",
	"vllm:nixl_*":                                      "no NIXL KV transfer on an MLX host",
	"vllm:kv_offload_*":                                "no KV offloading connector",
	"vllm:simple_kv_offload_*":                         "no KV offloading connector",
	"vllm:spec_decode_*":                               "the host reports no speculative decoding",
	"vllm:estimated_*":                                 "the host reports no FLOPs or memory traffic estimate",
	"vllm:sleep_mode_operation_duration_seconds":       "the host has no sleep mode API; its loads and unloads are mlx_model_load_time_seconds and mlx_model_unloads_total",
	"vllm:rl_weight_update_operation_duration_seconds": "the host reports no RL weight update",
	"http_requests_total":                              "the host's events carry no HTTP status or route of its API server",
	"http_request_duration_seconds":                    "the host's events carry no HTTP status or route of its API server",
}

// metricName matches the metric names in an expression.
var metricName = regexp.MustCompile(`\b(vllm:[a-z0-9_:]+|http_[a-z_]+|process_[a-z_]+)`)

// expectEmpty is why q answers nothing, "" when it must answer.
func expectEmpty(expr string) string {
	for _, name := range metricName.FindAllString(expr, -1) {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			name = strings.TrimSuffix(name, suffix)
		}
		for family, why := range notExported {
			if family == name || strings.HasSuffix(family, "*") && strings.HasPrefix(name, strings.TrimSuffix(family, "*")) {
				return family + ": " + why
			}
		}
	}
	return ""
}

// labelValues reads Grafana's label_values(selector, label) as the query
// whose series carry the label's values.
var labelValues = regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`)

// Every query of every vLLM dashboard (the current ones and the older
// prometheus_grafana one), run by a real Prometheus scraping the exposition
// of a host's traffic: each answers with data, or reads a family listed
// in notExported with the reason. vLLM users keep their dashboards.
func TestVLLMDashboardsHaveData(t *testing.T) {
	if len(vllmDashboard) != 27 {
		t.Fatalf("%d queries of the older dashboard, want its 27", len(vllmDashboard))
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

	target := strings.TrimPrefix(srv.URL, "http://")
	prom := promtest.Start(t, time.Second, promtest.Job{Name: "mlx-metrics", Targets: []string{target}})
	prom.WaitScrapes(t, 5, time.Minute)
	// What Grafana fills in: each variable's one value (All of one value),
	// $__rate_interval at a 1 s scrape interval (4 s; 5 s holds 4 or 5
	// scrapes), a range the test's scrapes fall in, and the SLO variables'
	// defaults.
	fill := strings.NewReplacer("$model_name", model, "$Deployment_id", model, "$job", "mlx-metrics",
		"$instance", target, "$engine", "0", "$ttft_slo", "1.0", "$tpot_slo", "0.1",
		"$__rate_interval", "5s", "$__range", "1m")
	queries := append([]dashboardQuery{}, vllmDashboards...)
	for _, q := range vllmDashboard {
		queries = append(queries, dashboardQuery{"prometheus_grafana/grafana.json", q.panel, q.expr})
	}
	type tally struct{ data, empty int }
	tallies := map[string]*tally{}
	for _, q := range queries {
		if tallies[q.dashboard] == nil {
			tallies[q.dashboard] = &tally{}
		}
		tl := tallies[q.dashboard]
		t.Run(q.dashboard+"/"+q.panel, func(t *testing.T) {
			expr, label := fill.Replace(q.expr), ""
			if m := labelValues.FindStringSubmatch(expr); m != nil {
				expr, label = fmt.Sprintf("count by (%s) (%s)", m[2], m[1]), m[2]
			}
			got, err := prom.Query(context.Background(), expr)
			if err != nil {
				t.Fatalf("%s: %v", expr, err)
			}
			why := expectEmpty(q.expr)
			if why != "" {
				tl.empty++
				if len(got) > 0 {
					t.Errorf("%s answers %v, yet %s is listed as not exported: take it off notExported", expr, got, why)
				}
				return
			}
			tl.data++
			if len(got) == 0 {
				t.Errorf("%s: no data", expr)
			}
			positive := false
			for _, s := range got {
				if math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
					t.Errorf("%s: %v in %v", expr, s.Value, got)
				}
				if label != "" && s.Labels[label] == "" {
					t.Errorf("%s: a series without %s: %v", expr, label, s.Labels)
				}
				positive = positive || s.Value > 0
			}
			// The older dashboard's gauges, rates and increases of the
			// traffic: all above 0 (Num Waiting is 0 one sample in three).
			if q.dashboard == "prometheus_grafana/grafana.json" && len(got) > 0 && !positive && !strings.Contains(q.panel, "Waiting") {
				t.Errorf("%s: %v, want above 0", expr, got)
			}
		})
	}
	names := make([]string, 0, len(tallies))
	for n := range tallies {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Logf("%s: %d queries answer with data, %d read families not exported", n, tallies[n].data, tallies[n].empty)
	}
}
