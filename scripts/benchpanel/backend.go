package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// server is one running `mlx-metrics serve` with the reference engine.
type server struct {
	cmd  *exec.Cmd
	base string // http://127.0.0.1:PORT
	home string
	log  *serveLog
	done chan struct{}
}

var servingOn = regexp.MustCompile(`serving on http://(\S+) `)

// serveLog keeps the server's output and hands over the address of its
// "serving on http://ADDR" line, once.
type serveLog struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	addr  chan string
	found bool
}

func (l *serveLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf.Len() < 1<<20 {
		l.buf.Write(p)
	}
	if m := servingOn.FindSubmatch(l.buf.Bytes()); m != nil && !l.found {
		l.found = true
		l.addr <- string(m[1])
	}
	return len(p), nil
}

func (l *serveLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// startServer runs bin serve on a loopback port it picks itself, with a
// throw-away home and the reference engine's default traffic (one request
// a second), and fleet as its --fleet when not empty.
func startServer(ctx context.Context, bin, fleet string) (*server, error) {
	home, err := os.MkdirTemp("", "bench-panel-home-")
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "--addr", "127.0.0.1:0", "--home", home, "--reference-engine"}
	if fleet != "" {
		args = append(args, "--fleet", fleet)
	}
	s := &server{home: home, log: &serveLog{addr: make(chan string, 1)}, done: make(chan struct{})}
	s.cmd = exec.CommandContext(ctx, bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(home)
		return nil, err
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	select {
	case addr := <-s.log.addr:
		s.base = "http://" + addr
	case <-s.done:
		os.RemoveAll(home)
		return nil, fmt.Errorf("mlx-metrics serve exited before serving:\n%s", s.log)
	case <-time.After(30 * time.Second):
		s.stop()
		return nil, fmt.Errorf("mlx-metrics serve did not say where it serves within 30 s:\n%s", s.log)
	}
	return s, nil
}

func (s *server) stop() {
	if s.cmd.Process != nil {
		s.cmd.Process.Signal(os.Interrupt)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
		}
	}
	os.RemoveAll(s.home)
}

// modelName is the name of posted model i (1 and up; the reference
// engine's model is the first of every count).
func modelName(i int) string { return fmt.Sprintf("bench/model-%04d", i) }

// feeder posts the traffic of models-1 models beside the reference
// engine's: each loaded once, then every second a scheduler sample and
// a KV and a prefix cache sample of every one, as an engine sampling
// once a second does, and a finished request of one model in eight,
// taken in turn (each model finishes one every 8 s).
type feeder struct {
	base   string
	models int // posted models (the count less the reference engine's)
	rng    *rand.Rand
	turn   int
	reqs   int
	hits   []int64
	posts  int
	events int
}

func newFeeder(base string, models int) *feeder {
	return &feeder{base: base, models: models, rng: rand.New(rand.NewPCG(1, uint64(models))), hits: make([]int64, models+1)}
}

func f64(v float64) *float64 { return &v }
func i64(v int64) *int64     { return &v }

// loads are the posted models' loads, finished at now.
func (f *feeder) loads(now int64) []events.Event {
	var evs []events.Event
	for i := 1; i <= f.models; i++ {
		evs = append(evs, events.Event{Type: events.TypeModelLoad, At: now - 1000, Payload: &events.ModelLoad{
			Model: modelName(i), Phase: events.PhaseFinished, Ms: f64(800 + float64(i%50)), WeightsBytes: i64(int64(1+i%8) << 30),
		}})
	}
	return evs
}

// second is one second of the posted models' traffic at now.
func (f *feeder) second(now int64) []events.Event {
	var evs []events.Event
	const capacity = int64(1 << 30)
	for i := 1; i <= f.models; i++ {
		m := modelName(i)
		active := f.rng.IntN(9)
		f.hits[i] += int64(f.rng.IntN(4))
		evs = append(evs,
			events.Event{Type: events.TypeSchedulerSample, At: now, Payload: &events.SchedulerSample{
				Model: m, Active: active, Capacity: 8, Queued: f.rng.IntN(3), TokensPerSecond: float64(active) * (30 + 10*f.rng.Float64()),
			}},
			events.Event{Type: events.TypeCacheSample, At: now, Payload: &events.CacheSample{
				Model: m, Cache: events.CacheKV, Bytes: f.rng.Int64N(capacity), CapacityBytes: i64(capacity),
			}},
			events.Event{Type: events.TypeCacheSample, At: now, Payload: &events.CacheSample{
				Model: m, Cache: events.CachePrefix, Bytes: f.rng.Int64N(capacity / 4), CapacityBytes: i64(capacity / 4),
				Hits: i64(f.hits[i]), Misses: i64(f.hits[i]/3 + 1),
			}},
		)
	}
	for range (f.models + 7) / 8 {
		f.turn = f.turn%f.models + 1
		f.reqs++
		queue, ttft := 5*f.rng.Float64(), 40+80*f.rng.Float64()
		prompt, completion := 16+f.rng.Int64N(240), 16+f.rng.Int64N(240)
		decode := 30 + 15*f.rng.Float64()
		evs = append(evs, events.Event{Type: events.TypeRequestFinished, At: now, Payload: &events.RequestFinished{
			Model: modelName(f.turn), RequestID: fmt.Sprintf("bench-%d", f.reqs), Finish: "stop",
			PromptTokens: prompt, CachedPromptTokens: prompt / 3, CompletionTokens: completion,
			QueueMs: f64(queue), TTFTMs: f64(ttft), PrefillTokensPerSecond: f64(float64(prompt) / (ttft - queue) * 1000),
			DecodeTokensPerSecond: f64(decode), TotalMs: ttft + float64(completion-1)/decode*1000,
		}})
	}
	return evs
}

// post sends evs to POST /api/metrics/events as one NDJSON batch.
func (f *feeder) post(ctx context.Context, evs []events.Event) error {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	for _, ev := range evs {
		if err := enc.Encode(ev); err != nil {
			return err
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.base+"/api/metrics/events", &body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var reply struct{ Accepted, Rejected int }
	if err := json.NewDecoder(res.Body).Decode(&reply); err != nil || res.StatusCode != http.StatusOK || reply.Rejected > 0 {
		return fmt.Errorf("POST events: %s, %+v (%v)", res.Status, reply, err)
	}
	f.posts++
	f.events += len(evs)
	return nil
}

// run posts the loads, then a second of traffic every second until ctx
// ends; the first error ends it, sent on errc.
func (f *feeder) run(ctx context.Context, errc chan<- error) {
	if f.models == 0 {
		return
	}
	now := time.Now().UnixMilli()
	if err := f.post(ctx, append(f.loads(now), f.second(now)...)); err != nil {
		errc <- err
		return
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case t := <-tick.C:
			if err := f.post(ctx, f.second(t.UnixMilli())); err != nil {
				if ctx.Err() == nil {
					errc <- err
				}
				return
			}
		}
	}
}

// fakeFleet is a Prometheus-compatible query API on loopback that
// answers every query of the fleet view: one host, and each model of the
// count on it with a figure, so that the Fleet tab shows and lists rows
// at the same count as the stream carries.
type fakeFleet struct {
	srv    *http.Server
	url    string
	models int
}

func startFakeFleet(models int) (*fakeFleet, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &fakeFleet{url: "http://" + l.Addr().String(), models: models}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.answer)}
	go f.srv.Serve(l)
	return f, nil
}

func (f *fakeFleet) answer(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/query" {
		http.NotFound(w, r)
		return
	}
	r.ParseForm()
	q := r.Form.Get("query")
	const host = "bench-host:7878"
	var samples []string
	switch {
	case strings.Contains(q, "mlx_build_info"):
		samples = append(samples, fmt.Sprintf(`{"metric":{"instance":%q,"version":"bench"},"value":[%d,"1"]}`, host, time.Now().Unix()))
	case strings.Contains(q, "sum by (le)"):
		samples = append(samples, fmt.Sprintf(`{"metric":{},"value":[%d,"0.1"]}`, time.Now().Unix()))
	default:
		for i := range f.models {
			name := "reference-sim"
			if i > 0 {
				name = modelName(i)
			}
			samples = append(samples, fmt.Sprintf(`{"metric":{"instance":%q,"model_name":%q},"value":[%d,"%g"]}`,
				host, name, time.Now().Unix(), 1+float64(i%97)/10))
		}
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[`+strings.Join(samples, ",")+`]}}`)
}

func (f *fakeFleet) stop() { f.srv.Close() }
