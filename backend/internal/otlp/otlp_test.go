package otlp

import (
	"compress/gzip"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/backend/internal/prom"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// receiver is an in-process OTLP receiver on 127.0.0.1: what it was sent,
// and the status an HTTP receiver answers (200 unless set).
type receiver struct {
	endpoint string
	mu       sync.Mutex
	got      []*colmetricpb.ExportMetricsServiceRequest
	status   int
}

func (r *receiver) take(req *colmetricpb.ExportMetricsServiceRequest) {
	r.mu.Lock()
	r.got = append(r.got, req)
	r.mu.Unlock()
}

func (r *receiver) requests() []*colmetricpb.ExportMetricsServiceRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func (r *receiver) setStatus(s int) { r.mu.Lock(); r.status = s; r.mu.Unlock() }

// httpReceiver decodes OTLP/HTTP protobuf posts to /v1/metrics.
func httpReceiver(t *testing.T) *receiver {
	r := &receiver{status: http.StatusOK}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != "/v1/metrics" {
			t.Errorf("receiver got %s %s", req.Method, req.URL.Path)
			w.WriteHeader(http.StatusNotFound)
			return
		}
		if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
			t.Errorf("Content-Type %q", ct)
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			gz, err := gzip.NewReader(req.Body)
			if err != nil {
				t.Error(err)
				return
			}
			body = gz
		}
		b, err := io.ReadAll(io.LimitReader(body, 16<<20))
		var m colmetricpb.ExportMetricsServiceRequest
		if err == nil {
			err = proto.Unmarshal(b, &m)
		}
		if err != nil {
			t.Errorf("undecodable export: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		status := r.status
		r.mu.Unlock()
		if status != http.StatusOK {
			w.WriteHeader(status)
			return
		}
		r.take(&m)
		resp, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(resp)
	}))
	t.Cleanup(srv.Close)
	r.endpoint = srv.URL // no path: /v1/metrics is added
	return r
}

type grpcService struct {
	colmetricpb.UnimplementedMetricsServiceServer
	r *receiver
}

func (s grpcService) Export(_ context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	s.r.take(req)
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

// grpcReceiver serves the OTLP MetricsService.
func grpcReceiver(t *testing.T) *receiver {
	r := &receiver{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	colmetricpb.RegisterMetricsServiceServer(s, grpcService{r: r})
	go s.Serve(ln)
	t.Cleanup(s.Stop)
	r.endpoint = "http://" + ln.Addr().String()
	return r
}

// point is one received data point, flattened.
type point struct {
	kind   string // gauge, sum, histogram
	unit   string
	attrs  map[string]string
	value  float64 // gauge and sum; histogram: sum
	count  uint64
	bounds []float64
	mono   bool
}

func flatten(reqs []*colmetricpb.ExportMetricsServiceRequest) (map[string][]point, map[string]string) {
	out := map[string][]point{}
	res := map[string]string{}
	for _, req := range reqs {
		for _, rm := range req.GetResourceMetrics() {
			for _, kv := range rm.GetResource().GetAttributes() {
				res[kv.GetKey()] = kv.GetValue().GetStringValue()
			}
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					ps := points(m)
					for i := range ps {
						ps[i].unit = m.GetUnit()
					}
					out[m.GetName()] = append(out[m.GetName()], ps...)
				}
			}
		}
	}
	return out, res
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	a := map[string]string{}
	for _, kv := range kvs {
		a[kv.GetKey()] = kv.GetValue().GetStringValue()
	}
	return a
}

func points(m *metricpb.Metric) []point {
	var ps []point
	switch d := m.GetData().(type) {
	case *metricpb.Metric_Gauge:
		for _, dp := range d.Gauge.GetDataPoints() {
			ps = append(ps, point{kind: "gauge", attrs: attrs(dp.GetAttributes()), value: dp.GetAsDouble()})
		}
	case *metricpb.Metric_Sum:
		cumulative := d.Sum.GetAggregationTemporality() == metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
		for _, dp := range d.Sum.GetDataPoints() {
			ps = append(ps, point{kind: "sum", attrs: attrs(dp.GetAttributes()), value: dp.GetAsDouble(),
				mono: d.Sum.GetIsMonotonic() && cumulative})
		}
	case *metricpb.Metric_Histogram:
		for _, dp := range d.Histogram.GetDataPoints() {
			ps = append(ps, point{kind: "histogram", attrs: attrs(dp.GetAttributes()), value: dp.GetSum(),
				count: dp.GetCount(), bounds: dp.GetExplicitBounds()})
		}
	}
	return ps
}

func find(ps []point, want map[string]string) *point {
	for i, p := range ps {
		if len(p.attrs) != len(want) {
			continue
		}
		ok := true
		for k, v := range want {
			if p.attrs[k] != v {
				ok = false
			}
		}
		if ok {
			return &ps[i]
		}
	}
	return nil
}

// exporterWithData is a Prometheus exporter fed one of each kind of event.
func exporterWithData() *prom.Exporter {
	e := prom.New(prom.Options{})
	ttft := 85.0
	e.Observe(events.Event{Type: events.TypeSchedulerSample, At: 1, Payload: &events.SchedulerSample{
		Model: "qwen", Active: 4, Capacity: 16, Queued: 2, TokensPerSecond: 300}})
	e.Observe(events.Event{Type: events.TypeRequestFinished, At: 1, Payload: &events.RequestFinished{
		Model: "qwen", RequestID: "r1", Finish: events.FinishStop, PromptTokens: 100, CompletionTokens: 20,
		TTFTMs: &ttft, TotalMs: 900}})
	e.Observe(events.Event{Type: events.TypeRequestFinished, At: 1, Payload: &events.RequestFinished{
		RequestID: "r2", Finish: events.FinishError, TotalMs: 3}})
	return e
}

// The pusher sends, over each protocol, the instruments the Prometheus
// endpoint serves: the same families, labels and values.
func TestPushesWhatPrometheusServes(t *testing.T) {
	tests := []struct {
		protocol string
		receiver func(*testing.T) *receiver
	}{
		{ProtocolHTTP, httpReceiver},
		{ProtocolGRPC, grpcReceiver},
	}
	for _, tc := range tests {
		t.Run(tc.protocol, func(t *testing.T) {
			r := tc.receiver(t)
			e := exporterWithData()
			ctx := context.Background()
			// An interval no test waits for: the pushes are forced.
			p, err := Start(ctx, e.Registry(), Options{Endpoint: r.endpoint, Protocol: tc.protocol, Interval: MaxInterval})
			if err != nil {
				t.Fatal(err)
			}
			if err := p.ForceFlush(ctx); err != nil {
				t.Fatal(err)
			}
			got, res := flatten(r.requests())
			if res["service.name"] != "mlx-metrics" {
				t.Errorf("resource %v, want service.name mlx-metrics", res)
			}

			fams, err := e.Registry().Gather()
			if err != nil {
				t.Fatal(err)
			}
			// The GenAI conventions' instruments under their names, the
			// others under the Prometheus ones; every one with its unit.
			var served, pushed []string
			for _, f := range fams {
				name := f.GetName()
				if g, ok := genAIFamilies[name]; ok {
					name = g.name
				}
				if !slices.Contains(served, name) {
					served = append(served, name)
				}
			}
			for name, ps := range got {
				pushed = append(pushed, name)
				for _, p := range ps {
					if p.unit == "" {
						t.Errorf("%s pushed without a unit", name)
						break
					}
				}
			}
			slices.Sort(served)
			slices.Sort(pushed)
			if !slices.Equal(served, pushed) {
				t.Errorf("pushed %v,\nthe Prometheus endpoint serves %v", pushed, served)
			}

			checks := []struct {
				metric string
				attrs  map[string]string
				kind   string
				value  float64
				count  uint64
			}{
				{"mlx_num_requests_running", map[string]string{"model_name": "qwen"}, "gauge", 4, 0},
				{"mlx_num_requests_capacity", map[string]string{"model_name": "qwen"}, "gauge", 16, 0},
				{"mlx_request_success_total", map[string]string{"model_name": "qwen", "finished_reason": "stop"}, "sum", 1, 0},
				{"mlx_request_errors_total", map[string]string{"model_name": ""}, "sum", 1, 0},
				{"mlx_generation_tokens_total", map[string]string{"model_name": "qwen"}, "sum", 20, 0},
				{"gen_ai.server.time_to_first_token", genAIAttrs("qwen", ""), "histogram", 0.085, 1},
				{"gen_ai.server.request.duration", genAIAttrs("qwen", ""), "histogram", 0.9, 1},
				{"gen_ai.client.token.usage", genAIAttrs("qwen", "input"), "histogram", 100, 1},
				{"gen_ai.client.token.usage", genAIAttrs("qwen", "output"), "histogram", 20, 1},
			}
			for name, want := range map[string]string{
				"gen_ai.server.time_to_first_token": "s", "gen_ai.server.request.duration": "s",
				"gen_ai.client.token.usage": "{token}", "mlx_model_weights_bytes": "By",
				"mlx_num_requests_running": "{request}", "mlx_kv_cache_usage_ratio": "1",
				"mlx_generation_tokens_total": "{token}", "mlx_generation_tokens_per_second": "{token}/s",
			} {
				if ps := got[name]; len(ps) > 0 && ps[0].unit != want {
					t.Errorf("%s unit %q, want %q", name, ps[0].unit, want)
				}
			}
			for _, c := range checks {
				pt := find(got[c.metric], c.attrs)
				if pt == nil {
					t.Errorf("%s%v not pushed; got %+v", c.metric, c.attrs, got[c.metric])
					continue
				}
				if pt.kind != c.kind || pt.value != c.value || pt.count != c.count {
					t.Errorf("%s%v = %s %v (count %d), want %s %v (count %d)", c.metric, c.attrs,
						pt.kind, pt.value, pt.count, c.kind, c.value, c.count)
				}
				if c.kind == "sum" && !pt.mono {
					t.Errorf("%s is not a cumulative monotonic sum", c.metric)
				}
				if c.kind == "histogram" && (len(pt.bounds) == 0 || pt.bounds[0] != 0.001 && c.metric == "gen_ai.server.time_to_first_token") {
					t.Errorf("%s bounds %v, want vLLM's buckets", c.metric, pt.bounds)
				}
			}

			// A later push carries the totals since the start (cumulative).
			e.Observe(events.Event{Type: events.TypeRequestFinished, At: 2, Payload: &events.RequestFinished{
				Model: "qwen", RequestID: "r3", Finish: events.FinishLength, TotalMs: 10}})
			if err := p.Shutdown(ctx); err != nil { // pushes a last time
				t.Fatal(err)
			}
			reqs := r.requests()
			last, _ := flatten(reqs[len(reqs)-1:])
			if pt := find(last["gen_ai.server.request.duration"], genAIAttrs("qwen", "")); pt == nil || pt.count != 2 {
				t.Errorf("the last push's e2e count = %+v, want 2", pt)
			}
			if s := p.Stats(); s.Pushes != 2 || s.Failures != 0 {
				t.Errorf("stats %+v, want 2 pushes", s)
			}
		})
	}
}

// A receiver failing is counted and logged once per change, never fatal;
// the next push after it recovers carries everything.
func TestReceiverFailures(t *testing.T) {
	r := httpReceiver(t)
	var mu sync.Mutex
	var logs []string
	fake := clock.NewFake(time.UnixMilli(1764690000000))
	p, err := Start(context.Background(), exporterWithData().Registry(), Options{Endpoint: r.endpoint, Protocol: ProtocolHTTP, Interval: MaxInterval, Clock: fake,
		Logger: logging.Func(func(_ slog.Level, msg string) { mu.Lock(); logs = append(logs, msg); mu.Unlock() })})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	steps := []struct {
		status            int
		pushes, failures  uint64
		logs              int
		lastError, pushAt bool
	}{
		{http.StatusServiceUnavailable, 0, 1, 1, true, false},
		{http.StatusServiceUnavailable, 0, 2, 1, true, false}, // the same failure: not logged again
		{http.StatusOK, 1, 2, 2, false, true},                 // "answering again"
		{http.StatusOK, 2, 2, 2, false, true},
	}
	for i, st := range steps {
		r.setStatus(st.status)
		if err := p.ForceFlush(context.Background()); err != nil {
			t.Fatalf("step %d: ForceFlush: %v (a failed push must not be an error)", i, err)
		}
		s := p.Stats()
		mu.Lock()
		n := len(logs)
		mu.Unlock()
		if s.Pushes != st.pushes || s.Failures != st.failures || n != st.logs ||
			(s.LastError != "") != st.lastError || (s.LastPushAt != 0) != st.pushAt {
			t.Errorf("step %d: stats %+v and %d log lines, want %+v", i, s, n, st)
		}
	}
	if s := p.Stats(); s.LastPushAt != fake.Now().UnixMilli() {
		t.Errorf("last push at %d, want the clock's %d", s.LastPushAt, fake.Now().UnixMilli())
	}
}

func TestOptionsCheck(t *testing.T) {
	tests := []struct {
		in       Options
		endpoint string // after Check; "" when refused
		protocol string
		interval time.Duration
	}{
		{Options{Endpoint: "http://127.0.0.1:4318"}, "http://127.0.0.1:4318/v1/metrics", ProtocolHTTP, DefaultInterval},
		{Options{Endpoint: "https://otel.example:4318/", Protocol: ProtocolHTTP}, "https://otel.example:4318/v1/metrics", ProtocolHTTP, DefaultInterval},
		{Options{Endpoint: "http://127.0.0.1:4318/custom/path", Protocol: ProtocolHTTP, Interval: time.Minute}, "http://127.0.0.1:4318/custom/path", ProtocolHTTP, time.Minute},
		{Options{Endpoint: "http://127.0.0.1:4317", Protocol: ProtocolGRPC}, "http://127.0.0.1:4317", ProtocolGRPC, DefaultInterval},
		// Refused:
		{Options{Endpoint: "http://127.0.0.1:4317/v1/metrics", Protocol: ProtocolGRPC}, "", "", 0},
		{Options{Endpoint: "127.0.0.1:4317"}, "", "", 0},
		{Options{Endpoint: "ftp://h:1"}, "", "", 0},
		{Options{Endpoint: "http://user:secret@h:4318"}, "", "", 0},
		{Options{Endpoint: "http://h:4318?x=1"}, "", "", 0},
		{Options{Endpoint: "http://h:4318", Protocol: "http/json"}, "", "", 0},
		{Options{Endpoint: "http://h:4318", Interval: time.Millisecond}, "", "", 0},
		{Options{Endpoint: "http://h:4318", Interval: 2 * MaxInterval}, "", "", 0},
		{Options{Endpoint: "http://h:4318", Interval: -time.Second}, "", "", 0},
	}
	for _, tc := range tests {
		got, err := tc.in.Check()
		if tc.endpoint == "" {
			if err == nil {
				t.Errorf("%+v: accepted", tc.in)
			} else if strings.Contains(err.Error(), "secret") {
				t.Errorf("%+v: the error echoes a credential: %v", tc.in, err)
			}
			continue
		}
		if err != nil || got.Endpoint != tc.endpoint || got.Protocol != tc.protocol || got.Interval != tc.interval {
			t.Errorf("%+v: got %q %q %v, %v; want %q %q %v", tc.in, got.Endpoint, got.Protocol, got.Interval, err,
				tc.endpoint, tc.protocol, tc.interval)
		}
	}
}

// genAIAttrs are a GenAI instrument's attributes for model (and a token
// type, when set).
func genAIAttrs(model, tokenType string) map[string]string {
	a := map[string]string{"gen_ai.request.model": model, "gen_ai.operation.name": genAIOperation, "gen_ai.provider.name": genAIProvider}
	if tokenType != "" {
		a["gen_ai.token.type"] = tokenType
	}
	return a
}

// Every family the exporter registers has a UCUM unit, so a family added
// later cannot go out without one.
func TestEveryFamilyHasAUnit(t *testing.T) {
	descs := make(chan *prometheus.Desc, 128)
	go func() {
		prom.New(prom.Options{}).Registry().Describe(descs)
		close(descs)
	}()
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	n := 0
	for d := range descs {
		name := fqName.FindStringSubmatch(d.String())[1]
		n++
		if unitOf(name) == "" {
			t.Errorf("%s has no unit: add it to units", name)
		}
	}
	if n < 20 {
		t.Fatalf("only %d families described", n)
	}
}
