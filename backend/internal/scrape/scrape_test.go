package scrape

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/events"
)

const llama8b = "meta-llama/Llama-3.1-8B-Instruct"

func f64(v float64) *float64 { return &v }
func i64(v int64) *int64     { return &v }

func sched(model string, active, queued int, tps float64) *events.SchedulerSample {
	return &events.SchedulerSample{Model: model, Active: active, Queued: queued, TokensPerSecond: tps}
}

func kv(model string, usage float64) *events.CacheSample {
	return &events.CacheSample{Model: model, Cache: events.CacheKV, UsageRatio: f64(usage)}
}

func prefix(model string, hits, misses int64) *events.CacheSample {
	return &events.CacheSample{Model: model, Cache: events.CachePrefix, Hits: i64(hits), Misses: i64(misses)}
}

// fixtureServer answers each GET with the next file of files (the last one
// repeats), or with status when it is not 200.
func fixtureServer(t *testing.T, status int, files ...string) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		f := files[min(n, len(files)-1)]
		n++
		mu.Unlock()
		if status != http.StatusOK {
			http.Error(w, "engine starting", status)
			return
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// histMs is an engine histogram's increase as an event carries it: its
// bounds in seconds made ms, the counts of the buckets at, and its sum's
// increase (from before to after, in seconds) in ms; tokens with scale 1.
func histMs(bounds []float64, scale float64, at map[int]int64, before, after float64) *events.Histogram {
	h := &events.Histogram{Bounds: make([]float64, len(bounds)), Counts: make([]int64, len(bounds)+1), Sum: (after - before) * scale}
	for i, b := range bounds {
		h.Bounds[i] = b * scale
	}
	for i, c := range at {
		h.Counts[i] = c
	}
	return h
}

// The engines' bounds, as the fixtures (testdata/gen_expositions.py) have them.
var (
	vTTFT  = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	vITL   = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	vPhase = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	vLen   = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}
	sTTFT  = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400}
	sE2E   = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200, 1800, 2400}
	sITL   = []float64{0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000}
	sQueue = []float64{0.0, 0.1, 0.2, 0.5, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000, 2500, 3000}
)

// What the fixtures' second polls add (testdata/gen_expositions.py).
var (
	vllmRequests = &events.RequestsSample{Model: llama8b, IntervalMs: 5000, Finished: 8,
		ByFinish:     events.FinishTotalsByReason{Stop: 6, Length: 1, Error: 1},
		PromptTokens: 6000, CachedPromptTokens: i64(2000), GenerationTokens: 1500,
		TTFTMs: histMs(vTTFT, 1000, map[int]int64{5: 6, 8: 2}, 11.52, 11.52+0.7),
		// Per request, not the per-token vllm:inter_token_latency_seconds.
		TPOTMs:            histMs(vITL, 1000, map[int]int64{0: 2, 1: 6}, 3.6, 3.6+0.14),
		TotalMs:           histMs(vPhase, 1000, map[int]int64{3: 2, 4: 4, 6: 2}, 200, 200+11.0),
		QueueMs:           histMs(vPhase, 1000, map[int]int64{0: 8}, 3.6, 3.6+0.16),
		PrefillMs:         histMs(vPhase, 1000, map[int]int64{0: 8}, 9, 9+0.5),
		DecodeMs:          histMs(vPhase, 1000, map[int]int64{1: 2, 3: 4, 5: 2}, 170, 170+8.4),
		PromptLengths:     histMs(vLen, 1, map[int]int64{8: 4, 9: 4}, 183040, 183040+6000.0),
		GenerationLengths: histMs(vLen, 1, map[int]int64{6: 8}, 13000, 13000+600.0),
	}
	// SGLang counts requests without reasons; its TPOT is per token.
	sglangRequests = &events.RequestsSample{Model: llama8b, IntervalMs: 5000, Finished: 10,
		PromptTokens: 5000, CachedPromptTokens: i64(3000), GenerationTokens: 2000,
		TTFTMs:  histMs(sTTFT, 1000, map[int]int64{0: 8, 1: 2}, 98.2, 98.2+0.9),
		TPOTMs:  histMs(sITL, 1000, map[int]int64{5: 1500, 6: 500}, 2600, 2600+25.0),
		TotalMs: histMs(sE2E, 1000, map[int]int64{6: 6, 7: 4}, 3500, 3500+24.0),
		QueueMs: histMs(sQueue, 1000, map[int]int64{0: 9, 1: 1}, 5, 5+0.05),
	}
)

// rounded is p with its histograms' sums to a millionth: a sum's
// increase is a difference of two decimals, exact in neither.
func rounded(p any) any {
	r, ok := p.(*events.RequestsSample)
	if !ok {
		return p
	}
	c := *r
	for _, h := range []**events.Histogram{&c.QueueMs, &c.TTFTMs, &c.TotalMs, &c.TPOTMs, &c.PrefillMs, &c.DecodeMs,
		&c.PromptLengths, &c.GenerationLengths} {
		if *h != nil {
			x := **h
			x.Sum = math.Round(x.Sum*1e6) / 1e6
			*h = &x
		}
	}
	return &c
}

func TestScrapeFixtures(t *testing.T) {
	tests := []struct {
		name   string
		kind   string // the flag's kind part; "" detects
		model  string
		files  []string
		status int
		// want is the payloads of the last poll, in order.
		want    []any
		wantErr string
	}{
		{
			name: "vllm rate from the counter, requests from the histograms, between two polls", kind: "vllm",
			files: []string{"testdata/vllm-1.txt", "testdata/vllm-2.txt"},
			want: []any{
				sched(llama8b, 14, 3, (53500-52000)/5.0),
				kv(llama8b, 0.5),
				prefix(llama8b, 62464, 185088-62464),
				vllmRequests,
			},
		},
		{
			name: "vllm first poll has no rate and no requests", kind: "vllm",
			files: []string{"testdata/vllm-1.txt"},
			want: []any{
				sched(llama8b, 12, 3, 0),
				kv(llama8b, 0.4375),
				prefix(llama8b, 61440, 183040-61440),
			},
		},
		{
			name:  "vllm v0 names, kind detected",
			files: []string{"testdata/vllm-v0.txt"},
			want:  []any{sched("Qwen/Qwen2.5-7B-Instruct", 2, 0, 0), kv("Qwen/Qwen2.5-7B-Instruct", 0.0125)},
		},
		{
			name: "sglang first poll: dp ranks summed, usage averaged, radix cache as prefix", kind: "sglang",
			files: []string{"testdata/sglang-1.txt"},
			want: []any{
				sched(llama8b, 9, 1, 800),
				kv(llama8b, 0.25),
				prefix(llama8b, 552000, 920000-552000),
			},
		},
		{
			name: "sglang second poll: rate from the counter, requests without reasons", kind: "sglang",
			files: []string{"testdata/sglang-1.txt", "testdata/sglang-2.txt"},
			want: []any{
				sched(llama8b, 9, 1, 2000/5.0),
				kv(llama8b, 0.25),
				prefix(llama8b, 555000, 925000-555000),
				sglangRequests,
			},
		},
		{
			name:  "sglang_ names read as sglang:, kind detected",
			files: []string{"testdata/sglang_-1.txt", "testdata/sglang_-2.txt"},
			want: []any{
				sched(llama8b, 9, 1, 2000/5.0),
				kv(llama8b, 0.25),
				prefix(llama8b, 555000, 925000-555000),
				sglangRequests,
			},
		},
		{
			name: "llama.cpp first poll uses its throughput gauge", kind: "llamacpp", model: "tinyllama-1.1b",
			files: []string{"testdata/llamacpp-1.txt"},
			want:  []any{sched("tinyllama-1.1b", 2, 1, 40), kv("tinyllama-1.1b", 0.171)},
		},
		{
			name: "llama.cpp second poll: rate and tokens from its counters, no requests or timings", kind: "llamacpp", model: "tinyllama-1.1b",
			files: []string{"testdata/llamacpp-1.txt", "testdata/llamacpp-2.txt"},
			want: []any{sched("tinyllama-1.1b", 2, 1, 400/5.0), kv("tinyllama-1.1b", 0.18),
				&events.RequestsSample{Model: "tinyllama-1.1b", IntervalMs: 5000, PromptTokens: 2048, GenerationTokens: 400}},
		},
		{
			name: "llama.cpp idle second poll generates nothing", kind: "llamacpp", model: "tinyllama-1.1b",
			files: []string{"testdata/llamacpp-1.txt", "testdata/llamacpp-1.txt"},
			want:  []any{sched("tinyllama-1.1b", 2, 1, 0), kv("tinyllama-1.1b", 0.171)},
		},
		{
			name: "values no event may carry are clamped or left out", kind: "vllm",
			files: []string{"testdata/vllm-invalid.txt"},
			want:  []any{sched("good", 0, 3, 0), kv("good", 0.3)},
		},
		{
			name: "engine answering an error", kind: "vllm", status: http.StatusServiceUnavailable,
			files: []string{"testdata/vllm-1.txt"}, wantErr: "503",
		},
		{
			name:  "an engine of no known dialect",
			files: []string{"testdata/unknown.txt"}, wantErr: "is one vLLM, SGLang (sglang: or sglang_), llama.cpp or mlx-metrics exposes",
		},
		{
			name: "an engine of another kind than given", kind: "vllm",
			files: []string{"testdata/sglang_-1.txt"}, wantErr: "is one a vllm engine exposes: it reads as sglang (give the kind sglang, or auto)",
		},
		{
			name:  "a page that is not metrics",
			files: []string{"testdata/../scrape_test.go"}, wantErr: "parsing metrics",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status := tc.status
			if status == 0 {
				status = http.StatusOK
			}
			srv := fixtureServer(t, status, tc.files...)
			spec := srv.URL
			if tc.kind != "" || tc.model != "" {
				spec += "," + tc.kind + "," + tc.model
			}
			target, err := ParseTarget(spec)
			if err != nil {
				t.Fatal(err)
			}
			now := time.UnixMilli(1764690000000)
			fake := clock.NewFake(now)
			var got []events.Event
			var logs []string
			s := New(target, func(ev events.Event) { got = append(got, ev) },
				Options{Clock: fake, Logger: logging.Func(func(_ slog.Level, msg string) { logs = append(logs, msg) })})
			for range tc.files {
				got = nil
				_, err = s.Poll(context.Background())
				now = now.Add(5 * time.Second)
				fake.Advance(5 * time.Second)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				if len(logs) != 1 {
					t.Errorf("logged %d lines for %d failing polls, want 1", len(logs), len(tc.files))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var payloads []any
			for _, ev := range got {
				payloads = append(payloads, rounded(ev.Payload))
				if ev.At != now.Add(-5*time.Second).UnixMilli() {
					t.Errorf("event at %d, want the poll's time", ev.At)
				}
				// Everything published must pass the wire validation.
				b, _ := json.Marshal(ev)
				if _, err := events.Parse(b); err != nil {
					t.Errorf("event %s does not validate: %v", b, err)
				}
			}
			for i, w := range tc.want {
				tc.want[i] = rounded(w)
			}
			if !reflect.DeepEqual(payloads, tc.want) {
				gb, _ := json.Marshal(payloads)
				wb, _ := json.Marshal(tc.want)
				t.Errorf("events\n got %s\nwant %s", gb, wb)
			}
		})
	}
}

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in      string
		want    Target
		wantErr bool
	}{
		{"http://127.0.0.1:8000", Target{URL: "http://127.0.0.1:8000/metrics", Model: "127.0.0.1:8000"}, false},
		{"http://h:8000/metrics,vllm", Target{URL: "http://h:8000/metrics", Kind: KindVLLM, Model: "h:8000"}, false},
		{"http://h:30000,sglang", Target{URL: "http://h:30000/metrics", Kind: KindSGLang, Model: "h:30000"}, false},
		{"http://h:8080,llamacpp,qwen-0.5b", Target{URL: "http://h:8080/metrics", Kind: KindLlamaCpp, Model: "qwen-0.5b"}, false},
		{"http://h:8080,auto", Target{URL: "http://h:8080/metrics", Model: "h:8080"}, false},
		{"http://h:7878/api/metrics/prometheus,mlx", Target{URL: "http://h:7878/api/metrics/prometheus", Kind: KindMLX, Model: "h:7878"}, false},
		{"http://h:8080,tgi", Target{}, true},
		{"h:8080", Target{}, true},
		{"ftp://h/metrics", Target{}, true},
		{"http://h,vllm,m,extra", Target{}, true},
	}
	for _, tc := range tests {
		got, err := ParseTarget(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseTarget(%q) err = %v, wantErr %v", tc.in, err, tc.wantErr)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseTarget(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestRunPollsOnEachTick(t *testing.T) {
	srv := fixtureServer(t, http.StatusOK, "testdata/llamacpp-1.txt")
	target, _ := ParseTarget(srv.URL + ",llamacpp,m")
	var mu sync.Mutex
	polls := 0
	published := make(chan struct{}, 16)
	s := New(target, func(ev events.Event) {
		if ev.Type == events.TypeSchedulerSample {
			mu.Lock()
			polls++
			mu.Unlock()
			published <- struct{}{}
		}
	}, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	tick := make(chan time.Time)
	done := make(chan struct{})
	go func() { s.Run(ctx, tick); close(done) }()
	<-published // the immediate first poll
	tick <- time.Now()
	<-published
	cancel()
	<-done
	if polls != 2 {
		t.Errorf("polls = %d, want 2", polls)
	}
}

// Stopping is not the target failing: a poll cut short by cancellation logs
// nothing, and Run with its context ended polls nothing.
func TestStoppingLogsNothing(t *testing.T) {
	var polled atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { polled.Add(1) }))
	defer srv.Close()
	target, _ := ParseTarget(srv.URL + ",vllm")
	var logs []string
	s := New(target, func(events.Event) {}, Options{Logger: logging.Func(func(_ slog.Level, msg string) { logs = append(logs, msg) })})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Poll(ctx); err == nil {
		t.Error("a cancelled poll succeeded")
	}
	s.Run(ctx, nil)
	if n := polled.Load(); n != 0 || len(logs) != 0 {
		t.Errorf("polled %d times and logged %q, want neither", n, logs)
	}
	// A real failure after it is still reported.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	target, _ = ParseTarget(dead.URL + ",vllm")
	s = New(target, func(events.Event) {}, Options{Logger: logging.Func(func(_ slog.Level, msg string) { logs = append(logs, msg) })})
	if _, err := s.Poll(context.Background()); err == nil || len(logs) != 1 {
		t.Errorf("err %v, logs %q: want the failure logged once", err, logs)
	}
}

// detect picks the kind that reads a model off the exposition: another
// mlx-metrics serves vLLM's names too and is read as itself; an SGLang in
// sglang_ names is SGLang; a vllm: family without a model does not make
// an exposition vLLM's.
func TestDetect(t *testing.T) {
	tests := []struct {
		name string
		text string
		want Kind
	}{
		{"vllm", "vllm:num_requests_running{model_name=\"m\"} 1\n", KindVLLM},
		{"sglang", "sglang:num_running_reqs{model_name=\"m\"} 1\n", KindSGLang},
		{"sglang_", "sglang_num_running_reqs{model_name=\"m\"} 1\n", KindSGLang},
		{"llama.cpp", "llamacpp:requests_processing 1\n", KindLlamaCpp},
		{"mlx", "mlx_num_requests_running{model_name=\"m\"} 1\n", KindMLX},
		{"mlx serving vllm names too", "vllm:num_requests_running{model_name=\"m\"} 1\nvllm:generation_tokens_total{model_name=\"m\"} 1\n" +
			"mlx_build_info{version=\"x\"} 1\nmlx_num_requests_running{model_name=\"m\"} 1\n", KindMLX},
		{"a vllm family naming no model beside sglang_ ones", "vllm:cache_config_info{block_size=\"16\"} 1\nsglang_num_queue_reqs{model_name=\"m\"} 0\n", KindSGLang},
		{"no engine's", "go_goroutines 7\n", KindAuto},
		{"a vllm family naming no model", "vllm:cache_config_info{block_size=\"16\"} 1\n", KindAuto},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parser := expfmt.NewTextParser(model.UTF8Validation)
			fams, err := parser.TextToMetricFamilies(strings.NewReader(tt.text))
			if err != nil {
				t.Fatal(err)
			}
			for range 20 { // map order varies
				if got := detect(fams, "host:1"); got != tt.want {
					t.Fatalf("detect = %q, want %q", got, tt.want)
				}
			}
		})
	}
}
