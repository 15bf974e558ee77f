package scrape

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

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
			name: "vllm rate from the counter between two polls", kind: "vllm",
			files: []string{"testdata/vllm-1.txt", "testdata/vllm-2.txt"},
			want: []any{
				sched(llama8b, 14, 3, (53500-52000)/5.0),
				kv(llama8b, 0.5),
				prefix(llama8b, 62464, 185088-62464),
			},
		},
		{
			name: "vllm first poll has no rate", kind: "vllm",
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
			name: "sglang sums dp ranks, averages usage, radix cache as prefix", kind: "sglang",
			files: []string{"testdata/sglang.txt"},
			want: []any{
				sched(llama8b, 9, 1, 800),
				kv(llama8b, 0.25),
				prefix(llama8b, 552000, 920000-552000),
			},
		},
		{
			name: "llama.cpp first poll uses its throughput gauge", kind: "llamacpp", model: "tinyllama-1.1b",
			files: []string{"testdata/llamacpp.txt"},
			want:  []any{sched("tinyllama-1.1b", 2, 1, 40), kv("tinyllama-1.1b", 0.171)},
		},
		{
			name: "llama.cpp idle second poll generates nothing", kind: "llamacpp", model: "tinyllama-1.1b",
			files: []string{"testdata/llamacpp.txt", "testdata/llamacpp.txt"},
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
			files: []string{"testdata/unknown.txt"}, wantErr: "give the kind",
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
				Options{Clock: fake, Logf: func(f string, a ...any) { logs = append(logs, f) }})
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
				payloads = append(payloads, ev.Payload)
				if ev.At != now.Add(-5*time.Second).UnixMilli() {
					t.Errorf("event at %d, want the poll's time", ev.At)
				}
				// Everything published must pass the wire validation.
				b, _ := json.Marshal(ev)
				if _, err := events.Parse(b); err != nil {
					t.Errorf("event %s does not validate: %v", b, err)
				}
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
	srv := fixtureServer(t, http.StatusOK, "testdata/llamacpp.txt")
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
	s := New(target, func(events.Event) {}, Options{Logf: func(f string, a ...any) { logs = append(logs, f) }})
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
	s = New(target, func(events.Event) {}, Options{Logf: func(f string, a ...any) { logs = append(logs, f) }})
	if _, err := s.Poll(context.Background()); err == nil || len(logs) != 1 {
		t.Errorf("err %v, logs %q: want the failure logged once", err, logs)
	}
}

// detect reads the dialect from the families' prefixes; another
// mlx-metrics serves vLLM's names beside its own and is read as itself.
func TestDetect(t *testing.T) {
	tests := []struct {
		names []string
		want  Kind
	}{
		{[]string{"vllm:num_requests_running"}, KindVLLM},
		{[]string{"sglang:num_running_reqs"}, KindSGLang},
		{[]string{"llamacpp:requests_processing"}, KindLlamaCpp},
		{[]string{"mlx_num_requests_running"}, KindMLX},
		{[]string{"vllm:num_requests_running", "vllm:generation_tokens_total", "mlx_build_info", "mlx_num_requests_running"}, KindMLX},
		{[]string{"vllm:num_requests_running", "mlx_build_info"}, KindMLX},
		{[]string{"go_goroutines"}, KindAuto},
	}
	for _, tt := range tests {
		fams := map[string]*dto.MetricFamily{}
		for _, n := range tt.names {
			fams[n] = &dto.MetricFamily{}
		}
		for range 20 { // map order varies
			if got := detect(fams); got != tt.want {
				t.Fatalf("detect(%v) = %s, want %s", tt.names, got, tt.want)
			}
		}
	}
}
