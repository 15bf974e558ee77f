package scrape

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/prom"
	"github.com/mlx-bun/mlx-metrics/gpu/engine"
	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// TestScrapeReferenceEngineThroughExporter closes the loop: the reference
// engine's events feed an exporter, and the scraper reads that exporter's
// text back (kind detected as mlx) into samples that agree with what the
// engine itself reported.
func TestScrapeReferenceEngineThroughExporter(t *testing.T) {
	exp := prom.New(prom.Options{})
	var mu sync.Mutex
	var lastSched *events.SchedulerSample
	var lastPrefix *events.CacheSample
	finished := 0
	cfg := engine.DefaultConfig()
	cfg.DecodeRate, cfg.PrefillRate, cfg.LoadTime, cfg.SampleInterval = 2000, 200000, 0, 5*time.Millisecond
	eng, err := engine.New(cfg, engine.Options{Sink: func(ev events.Event) {
		mu.Lock()
		defer mu.Unlock()
		exp.Observe(ev)
		switch p := ev.Payload.(type) {
		case *events.SchedulerSample:
			lastSched = p
		case *events.CacheSample:
			if p.Cache == events.CachePrefix {
				lastPrefix = p
			}
		case *events.RequestFinished:
			finished++
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { eng.Run(ctx); close(done) }()
	engSrv := httptest.NewServer(eng.Handler())
	defer func() { engSrv.Close(); cancel(); <-done }()

	// Two identical prompts: the second hits the prefix cache.
	prompt := strings.Repeat("the quick brown fox jumps over the lazy dog ", 20)
	send := func() {
		resp, err := http.Post(engSrv.URL+"/v1/completions", "application/json",
			strings.NewReader(`{"model":"reference-sim","max_tokens":40,"stream":true,"prompt":"`+prompt+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	send()
	send()

	app := fiber.New()
	app.Get("/api/metrics/prometheus", exp.Handle)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go app.Listener(ln)
	defer app.Shutdown()

	target, err := ParseTarget("http://" + ln.Addr().String() + "/api/metrics/prometheus")
	if err != nil {
		t.Fatal(err)
	}
	var got []events.Event
	s := New(target, func(ev events.Event) { got = append(got, ev) }, Options{})
	// The engine samples on its own goroutine; what the exporter holds and
	// what the sink saw last must be read at one instant.
	mu.Lock()
	_, err = s.Poll(context.Background())
	wantSched, wantPrefix, before := lastSched, lastPrefix, finished
	mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if wantSched == nil || wantPrefix == nil {
		t.Fatal("the engine published no samples")
	}
	var sched *events.SchedulerSample
	var prefix *events.CacheSample
	for _, ev := range got {
		switch p := ev.Payload.(type) {
		case *events.SchedulerSample:
			sched = p
		case *events.CacheSample:
			if p.Cache == events.CachePrefix {
				prefix = p
			}
		}
	}
	if sched == nil || *sched != *wantSched {
		t.Errorf("scraped scheduler %+v, engine reported %+v", sched, wantSched)
	}
	if prefix == nil || *prefix.Hits != *wantPrefix.Hits || *prefix.Misses != *wantPrefix.Misses || *prefix.Hits == 0 {
		t.Errorf("scraped prefix %+v, engine reported hits %d misses %d", prefix, *wantPrefix.Hits, *wantPrefix.Misses)
	}

	// The requests finished between two polls, as the exporter counted
	// them: the second poll's requests.sample.
	send()
	got = nil
	mu.Lock()
	_, err = s.Poll(context.Background())
	between := finished - before
	mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	var reqs *events.RequestsSample
	for _, ev := range got {
		if p, ok := ev.Payload.(*events.RequestsSample); ok {
			reqs = p
		}
	}
	if between == 0 {
		t.Fatal("the engine finished no request between the polls")
	}
	if reqs == nil || reqs.Finished != int64(between) || reqs.TTFTMs == nil || reqs.TTFTMs.Count() != int64(between) ||
		reqs.ByFinish.Sum() != int64(between) || reqs.GenerationTokens == 0 || reqs.PromptLengths == nil {
		t.Errorf("scraped requests %+v, the engine finished %d", reqs, between)
	}
}
