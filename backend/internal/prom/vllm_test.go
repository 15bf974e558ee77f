package prom

import (
	"bytes"
	"fmt"
	"math"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/tooltest"
)

func finished(model string, finish events.FinishReason, totalMs float64) events.Event {
	return events.Event{Type: events.TypeRequestFinished, At: 1, Payload: &events.RequestFinished{
		Model: model, RequestID: "r", Finish: finish, PromptTokens: 10, CompletionTokens: 5, TotalMs: totalMs}}
}

// The module's finish values map onto vLLM's finished_reason; an error is
// no success and is counted apart, under no model when none accepted it.
func TestFinishedReasonsAsVLLM(t *testing.T) {
	tests := []struct {
		name string
		in   []events.Event
		want string // exposition of success, errors and e2e count
	}{
		// Every reason and the errors are there at 0 from the model's
		// first sight, as vLLM creates them at its start.
		{"stop and length", []events.Event{finished("m", events.FinishStop, 100), finished("m", events.FinishLength, 100)}, `
mlx_e2e_request_latency_seconds_count{model_name="m"} 2
mlx_request_errors_total{model_name="m"} 0
mlx_request_success_total{finished_reason="abort",model_name="m"} 0
mlx_request_success_total{finished_reason="length",model_name="m"} 1
mlx_request_success_total{finished_reason="stop",model_name="m"} 1
`},
		{"cancelled is abort", []events.Event{finished("m", events.FinishCancelled, 100)}, `
mlx_e2e_request_latency_seconds_count{model_name="m"} 1
mlx_request_errors_total{model_name="m"} 0
mlx_request_success_total{finished_reason="abort",model_name="m"} 1
mlx_request_success_total{finished_reason="length",model_name="m"} 0
mlx_request_success_total{finished_reason="stop",model_name="m"} 0
`},
		{"an error is no success and no latency", []events.Event{finished("m", events.FinishError, 1), finished("m", events.FinishStop, 100)}, `
mlx_e2e_request_latency_seconds_count{model_name="m"} 1
mlx_request_errors_total{model_name="m"} 1
mlx_request_success_total{finished_reason="abort",model_name="m"} 0
mlx_request_success_total{finished_reason="length",model_name="m"} 0
mlx_request_success_total{finished_reason="stop",model_name="m"} 1
`},
		{"a model only loaded", []events.Event{{Type: events.TypeModelLoad, At: 1, Payload: &events.ModelLoad{Model: "m", Phase: events.PhaseFinished}}}, `
mlx_request_errors_total{model_name="m"} 0
mlx_request_success_total{finished_reason="abort",model_name="m"} 0
mlx_request_success_total{finished_reason="length",model_name="m"} 0
mlx_request_success_total{finished_reason="stop",model_name="m"} 0
`},
		{"a request no model accepted", []events.Event{finished("", events.FinishError, 1)}, `
mlx_request_errors_total{model_name=""} 1
`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Options{})
			for _, ev := range tc.in {
				e.Observe(ev)
			}
			got := samples(t, e, "mlx_request_success_total", "mlx_request_errors_total", "mlx_e2e_request_latency_seconds_count")
			if got != strings.TrimSpace(tc.want) {
				t.Errorf("got\n%s\nwant\n%s", got, strings.TrimSpace(tc.want))
			}
		})
	}
}

// samples is the exporter's text output (both families), less comments,
// limited to lines naming one of names, sorted as the encoder writes them.
func samples(t *testing.T, e *Exporter, names ...string) string {
	t.Helper()
	var keep []string
	for _, line := range strings.Split(expositionOf(t, e.Gatherer()), "\n") {
		for _, n := range names {
			if strings.HasPrefix(line, n+"{") || strings.HasPrefix(line, n+" ") {
				keep = append(keep, line)
			}
		}
	}
	slices.Sort(keep)
	return strings.Join(keep, "\n")
}

// exposition is the registry of the module's own families in the text
// format, as a scrape gets it.
func exposition(t *testing.T, e *Exporter) string {
	t.Helper()
	return expositionOf(t, e.Registry())
}

// expositionOf is what g gathers, in the text format.
func expositionOf(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range fams {
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// A model name the exposition format cannot carry raw (a NUL, invalid
// UTF-8, which client_golang refuses with a panic) must not corrupt or
// crash the output: it is exported with U+FFFD in place.
func TestLabelValuesAreSafe(t *testing.T) {
	long := strings.Repeat("é", events.MaxModelName) // 2 bytes a rune
	tests := []struct {
		name, model, label string
	}{
		{"NUL", "qwen\x00evil", "qwen\uFFFDevil"},
		{"invalid UTF-8", "qwen\xff\xfe", "qwen\uFFFD"},
		{"terminal escape", "qwen\x1b[31m", "qwen\uFFFD[31m"},
		{"newline", "a\nmlx_fake 1", "a\uFFFDmlx_fake 1"},
		{"quote and backslash kept, escaped", `a"b\c`, `a"b\c`},
		{"over-long", long + "x", long[:events.MaxModelName]},
		{"over-long, cut before a split rune", "a" + long, "a" + long[:events.MaxModelName-2]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Options{})
			e.Observe(finished(tc.model, events.FinishStop, 100))
			e.Observe(events.Event{Type: events.TypeSchedulerSample, At: 1, Payload: &events.SchedulerSample{Model: tc.model, Active: 1, Capacity: 2}})
			text := exposition(t, e)
			if strings.IndexByte(text, 0) >= 0 || strings.IndexByte(text, 0x1b) >= 0 {
				t.Fatalf("control byte in the output:\n%q", text)
			}
			parser := expfmt.NewTextParser(model.UTF8Validation)
			fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
			if err != nil {
				t.Fatalf("output does not parse: %v\n%s", err, text)
			}
			f := fams["mlx_num_requests_running"]
			if f == nil || len(f.GetMetric()) != 1 {
				t.Fatalf("want one running series, got %v", f)
			}
			if got := f.GetMetric()[0].GetLabel()[0].GetValue(); got != tc.label {
				t.Errorf("label %q, want %q", got, tc.label)
			}
		})
	}
}

// cache.sample's hits and misses are int64 running totals; their sum must
// not wrap negative (client_golang panics on a counter decreasing).
func TestPrefixTotalsDoNotOverflow(t *testing.T) {
	tests := []struct {
		name                 string
		hits, misses         []int64
		wantHits, wantQuerie float64
	}{
		{"two maximal totals", []int64{math.MaxInt64}, []int64{math.MaxInt64}, math.MaxInt64, 2 * float64(math.MaxInt64)},
		{"growing past int64 together", []int64{1, math.MaxInt64}, []int64{1, math.MaxInt64 - 1}, math.MaxInt64, float64(math.MaxInt64) + float64(math.MaxInt64-1)},
		{"negative totals are ignored", []int64{-5, 3}, []int64{-5, 1}, 3, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Options{})
			for i := range tc.hits {
				h, m := tc.hits[i], tc.misses[i]
				e.Observe(events.Event{Type: events.TypeCacheSample, At: 1, Payload: &events.CacheSample{
					Model: "m", Cache: events.CachePrefix, Hits: &h, Misses: &m}})
			}
			want := fmt.Sprintf(`
# HELP mlx_prefix_cache_hits_total Prefix cache lookups that hit.
# TYPE mlx_prefix_cache_hits_total counter
mlx_prefix_cache_hits_total{model_name="m"} %g
# HELP mlx_prefix_cache_queries_total Prefix cache lookups.
# TYPE mlx_prefix_cache_queries_total counter
mlx_prefix_cache_queries_total{model_name="m"} %g
`, tc.wantHits, tc.wantQuerie)
			if err := testutil.GatherAndCompare(e.Registry(), strings.NewReader(want),
				"mlx_prefix_cache_hits_total", "mlx_prefix_cache_queries_total"); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestPromtoolCheckMetrics lints a scrape of every family with Prometheus'
// own promtool, where it is installed (scripts/setup installs Debian's
// prometheus); see lookTool.
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool := tooltest.Look(t, "promtool")
	e := replay(t, "testdata/events.ndjson")
	e.Observe(finished("", events.FinishError, 1))
	e.Observe(events.Event{Type: events.TypeSchedulerSample, At: 1, Payload: &events.SchedulerSample{Model: "qwen3-8b", Active: 1, Capacity: 2}})
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(exposition(t, e))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// FuzzLabelValue: whatever a producer names a model, the label is valid
// UTF-8 without control characters, and the scrape parses.
func FuzzLabelValue(f *testing.F) {
	for _, seed := range []string{"qwen3-8b", "a\x00b", "\xff\xfe", "\x1b[2J", "a\nb", `"\`, strings.Repeat("é", 200), "\u2028", "\u0085"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		v := LabelValue(name)
		if !utf8.ValidString(v) || strings.IndexFunc(v, unicode.IsControl) >= 0 {
			t.Fatalf("LabelValue(%q) = %q", name, v)
		}
		if name == "" {
			return
		}
		e := New(Options{})
		e.Observe(finished(name, events.FinishStop, 1))
		parser := expfmt.NewTextParser(model.UTF8Validation)
		if _, err := parser.TextToMetricFamilies(strings.NewReader(exposition(t, e))); err != nil {
			t.Fatalf("model %q: the scrape does not parse: %v", name, err)
		}
	})
}

// vllm:engine_sleep_state says what the host's events imply: awake once a
// model is loaded or seen serving (its scheduler reports), its weights
// discarded once unloaded; an MLX host offloads no weights. vLLM's service
// status tiles read it (a model absent from it reads Down).
func TestEngineSleepState(t *testing.T) {
	load := events.Event{Type: events.TypeModelLoad, At: 1, Payload: &events.ModelLoad{Model: "m", Phase: events.PhaseFinished}}
	unload := events.Event{Type: events.TypeModelUnload, At: 2, Payload: &events.ModelUnload{Model: "m", Reason: "evicted"}}
	sample := events.Event{Type: events.TypeSchedulerSample, At: 3, Payload: &events.SchedulerSample{Model: "m", Active: 1, Capacity: 4}}
	awake := `
mlx_model_resident{model_name="m"} 1
vllm:engine_sleep_state{engine="0",model_name="m",sleep_state="awake"} 1
vllm:engine_sleep_state{engine="0",model_name="m",sleep_state="discard_all"} 0
vllm:engine_sleep_state{engine="0",model_name="m",sleep_state="weights_offloaded"} 0`
	asleep := `
mlx_model_resident{model_name="m"} 0
vllm:engine_sleep_state{engine="0",model_name="m",sleep_state="awake"} 0
vllm:engine_sleep_state{engine="0",model_name="m",sleep_state="discard_all"} 1
vllm:engine_sleep_state{engine="0",model_name="m",sleep_state="weights_offloaded"} 0`
	tests := []struct {
		name string
		in   []events.Event
		want string
	}{
		{"loaded", []events.Event{load}, awake},
		{"unloaded", []events.Event{load, unload}, asleep},
		{"seen serving, no load seen", []events.Event{sample}, awake},
		{"serving again after an unload", []events.Event{load, unload, sample}, awake},
		{"a request alone says nothing of it", []events.Event{finished("m", events.FinishStop, 100)}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Options{})
			for _, ev := range tc.in {
				e.Observe(ev)
			}
			var lines []string
			for _, l := range strings.Split(strings.TrimSpace(tc.want), "\n") {
				if l != "" {
					lines = append(lines, l)
				}
			}
			slices.Sort(lines)
			if got := samples(t, e, "mlx_model_resident", "vllm:engine_sleep_state"); got != strings.Join(lines, "\n") {
				t.Errorf("got\n%s\nwant\n%s", got, strings.Join(lines, "\n"))
			}
		})
	}
}

// What vLLM's current dashboards read beside the older one's: vLLM's
// engine label, the queue by reason, the prompt tokens by source and
// cached, the tokens prefill computed, the error reason at 0 from the
// start, and the process's own families in every exposition but not in
// what OTLP pushes.
func TestVLLMFamiliesTheDashboardsRead(t *testing.T) {
	e := New(Options{})
	e.Observe(events.Event{Type: events.TypeSchedulerSample, At: 1, Payload: &events.SchedulerSample{Model: "m", Active: 2, Queued: 3, Capacity: 4}})
	e.Observe(events.Event{Type: events.TypeRequestFinished, At: 2, Payload: &events.RequestFinished{
		Model: "m", RequestID: "r", Finish: events.FinishStop, PromptTokens: 900, CachedPromptTokens: 600, CompletionTokens: 5, TotalMs: 100}})
	want := `
vllm:num_requests_waiting_by_reason{engine="0",model_name="m",reason="capacity"} 3
vllm:num_requests_waiting_by_reason{engine="0",model_name="m",reason="deferred"} 0
vllm:prompt_tokens_by_source_total{engine="0",model_name="m",source="external_kv_transfer"} 0
vllm:prompt_tokens_by_source_total{engine="0",model_name="m",source="local_cache_hit"} 600
vllm:prompt_tokens_by_source_total{engine="0",model_name="m",source="local_compute"} 300
vllm:prompt_tokens_cached_total{engine="0",model_name="m"} 600
vllm:request_prefill_kv_computed_tokens_count{engine="0",model_name="m"} 1
vllm:request_prefill_kv_computed_tokens_sum{engine="0",model_name="m"} 300
vllm:request_success_total{engine="0",finished_reason="abort",model_name="m"} 0
vllm:request_success_total{engine="0",finished_reason="error",model_name="m"} 0
vllm:request_success_total{engine="0",finished_reason="length",model_name="m"} 0
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} 1`
	got := samples(t, e, "vllm:num_requests_waiting_by_reason", "vllm:prompt_tokens_by_source_total", "vllm:prompt_tokens_cached_total",
		"vllm:request_prefill_kv_computed_tokens_count", "vllm:request_prefill_kv_computed_tokens_sum", "vllm:request_success_total")
	if got != strings.TrimSpace(want) {
		t.Errorf("got\n%s\nwant\n%s", got, strings.TrimSpace(want))
	}
	// An unloaded model waits for nothing.
	e.Observe(events.Event{Type: events.TypeModelUnload, At: 3, Payload: &events.ModelUnload{Model: "m", Reason: events.ReasonIdle}})
	if got := samples(t, e, "vllm:num_requests_waiting_by_reason"); got != "" {
		t.Errorf("after the unload: %s", got)
	}
	for _, names := range []Names{NamesBoth, NamesMLX, NamesVLLM} {
		if !strings.Contains(expositionOf(t, New(Options{Names: names}).Gatherer()), "process_start_time_seconds") && runtime.GOOS == "linux" {
			t.Errorf("--prom-names %s serves no process_start_time_seconds", names)
		}
	}
	if strings.Contains(exposition(t, e), "process_") {
		t.Error("the process's families are in what OTLP pushes")
	}
}
