package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
)

// fakeAPI answers /api/v1/query with answer(query); it records the
// queries and their credentials (read them once the view is done).
func fakeAPI(t *testing.T, answer func(w http.ResponseWriter, query string)) (*httptest.Server, *[]string) {
	var seen []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		r.ParseForm()
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization")+" "+r.Form.Get("query"))
		mu.Unlock()
		answer(w, r.Form.Get("query"))
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func vector(samples ...string) string {
	return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(samples, ",") + `]}}`
}

func sample(host, model, value string) string {
	m := fmt.Sprintf(`"instance":%q`, host)
	if model != "" {
		m += fmt.Sprintf(`,"model_name":%q`, model)
	}
	return fmt.Sprintf(`{"metric":{%s},"value":[1764690000,%q]}`, m, value)
}

// A fleet of three hosts, one of which stopped reporting, and three
// models on them; the rows beyond the top two summed as others, their
// times asked for apart.
func TestViewFigures(t *testing.T) {
	srv, seen := fakeAPI(t, func(w http.ResponseWriter, q string) {
		switch {
		case strings.Contains(q, "unless on (instance, model_name) topk(2, sum by (instance, model_name) ("+rateOver("mlx_generation_tokens_total", "1h")+"))"):
			if strings.HasPrefix(q, "histogram_quantile(0.5, sum by (le) (rate(mlx_time_to_first_token_seconds_bucket[1h])") {
				fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1764690000,"0.4"]}]}}`)
				return
			}
			fmt.Fprint(w, vector())
		case strings.HasPrefix(q, "max by (instance, version) (last_over_time(mlx_build_info"):
			fmt.Fprint(w, vector(sample("a:7878", "", "1"), sample("b:7878", "", "1"), sample("c:7878", "", "1")))
		case strings.HasPrefix(q, "max by (instance) (mlx_build_info"):
			fmt.Fprint(w, vector(sample("a:7878", "", "1"), sample("b:7878", "", "1")))
		case strings.Contains(q, "mlx_generation_tokens_total"):
			fmt.Fprint(w, vector(sample("a:7878", "m1", "300"), sample("b:7878", "m1", "100"), sample("b:7878", "m2", "10"), sample("c:7878", "m3", "5")))
		case strings.Contains(q, "mlx_request_success_total"):
			fmt.Fprint(w, vector(sample("a:7878", "m1", "3"), sample("b:7878", "m2", "1"), sample("c:7878", "m3", "0.5")))
		case strings.Contains(q, "histogram_quantile(0.99") && strings.Contains(q, "time_to_first"):
			fmt.Fprint(w, vector(sample("a:7878", "m1", "0.25"), sample("b:7878", "m1", "NaN")))
		case strings.Contains(q, "mlx_kv_cache_usage_ratio"):
			fmt.Fprint(w, vector(sample("b:7878", "m2", "0.5"), sample("c:7878", "m3", "0.75")))
		default:
			fmt.Fprint(w, vector())
		}
	})
	c, err := NewClient(srv.URL+"/", Options{BearerToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	s := NewService(c, Config{TopRows: 2})
	v, err := s.View(context.Background(), Request{Range: "1h"})
	if err != nil {
		t.Fatal(err)
	}
	hosts := fmt.Sprint(v.Hosts)
	if want := "[{a:7878 true } {b:7878 true } {c:7878 false }]"; hosts != want {
		t.Errorf("hosts %s, want %s", hosts, want)
	}
	if len(v.Rows) != 2 || v.Rows[0].Host != "a:7878" || *v.Rows[0].TokensPerSecond != 300 || *v.Rows[0].TTFT.P99 != 0.25 ||
		v.Rows[1].Host != "b:7878" || v.Rows[1].Model != "m1" || v.Rows[1].TTFT.P99 != nil {
		t.Errorf("rows %+v", v.Rows)
	}
	o := v.Others
	if o == nil || o.Rows != 2 || *o.TokensPerSecond != 15 || *o.RequestsPerSecond != 1.5 || *o.KVUsage != 0.75 ||
		o.TTFT.P50 == nil || *o.TTFT.P50 != 0.4 || o.TTFT.P99 != nil {
		t.Errorf("others %+v", o)
	}
	// 16 figures, and 9 times of the others.
	if len(v.Queries) != 25 || !strings.Contains(v.Queries["ttft.p99"], "[1h]") || !strings.Contains(v.Queries["others.e2e.p95"], "e2e") {
		t.Errorf("queries %d: %v", len(v.Queries), v.Queries)
	}
	if len(*seen) != 25 || !strings.HasPrefix((*seen)[0], "Bearer tok ") {
		t.Errorf("%d queries asked, first %q", len(*seen), (*seen)[0])
	}
	// A second ask within CacheFor is answered without asking again.
	if _, err := s.View(context.Background(), Request{Range: "1h"}); err != nil || len(*seen) != 25 {
		t.Errorf("a repeated view asked %d queries, err %v", len(*seen), err)
	}
	// With room for every row there are no others, nor their queries.
	all, err := NewService(c, Config{TopRows: 4}).View(context.Background(), Request{Range: "1h"})
	if err != nil || all.Others != nil || len(all.Rows) != 4 || len(all.Queries) != 16 {
		t.Errorf("top 4 of 4 rows: others %+v, %d rows, %d queries, err %v", all.Others, len(all.Rows), len(all.Queries), err)
	}
}

// Filters become label matchers in every figure's query; a host filter in
// the host queries too.
func TestFilters(t *testing.T) {
	srv, seen := fakeAPI(t, func(w http.ResponseWriter, _ string) { fmt.Fprint(w, vector()) })
	c, _ := NewClient(srv.URL, Options{Username: "u", Password: "p"})
	s := NewService(c, Config{HostLabel: "host"})
	if _, err := s.View(context.Background(), Request{Host: `a"b`, Model: "m\\1"}); err != nil {
		t.Fatal(err)
	}
	for _, q := range *seen {
		if !strings.HasPrefix(q, "Basic ") || !strings.Contains(q, `host="a\"b"`) {
			t.Errorf("query %q lacks the host filter or the basic auth", q)
		}
		if strings.Contains(q, "mlx_generation") && !strings.Contains(q, `model_name="m\\1"`) {
			t.Errorf("query %q lacks the model filter", q)
		}
		if strings.Contains(q, "[") && !strings.Contains(q, "[15m]") {
			t.Errorf("query %q is not over the default range", q)
		}
	}
	for _, r := range []Request{{Range: "2d"}, {Host: strings.Repeat("h", MaxFilter+1)}, {Model: "\xff"}} {
		var re *RequestError
		if _, err := s.View(context.Background(), r); !errors.As(err, &re) {
			t.Errorf("%+v: %v, want a RequestError", r, err)
		}
	}
}

// The query API down, slow, answering 4xx, 5xx, garbage, too much, or a
// partial answer: each said as what it is, in a bounded message.
func TestQueryFaults(t *testing.T) {
	// release ends the slow answers when a case is over, whether or not
	// the server noticed its client had gone.
	var release chan struct{}
	closed := func() string {
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr
	}()
	tests := []struct {
		name    string
		answer  func(w http.ResponseWriter, r *http.Request)
		base    string // instead of the fake
		kind    string // "" for success
		partial bool
		msgHas  string
	}{
		{name: "down", base: closed, kind: KindUnreachable, msgHas: "unreachable"},
		{name: "slow", answer: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}, kind: KindTimeout, msgHas: "no answer within"},
		// Each query answers within its timeout, but 16 of them four at a
		// time do not: the timeout bounds the whole view too.
		{name: "slow view", answer: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(120 * time.Millisecond):
				fmt.Fprint(w, vector())
			case <-r.Context().Done():
			case <-release:
			}
		}, kind: KindTimeout, msgHas: "within"},
		{name: "4xx", answer: func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "unauthorized", 401) }, kind: KindStatus, msgHas: "HTTP 401 unauthorized"},
		{name: "5xx", answer: func(w http.ResponseWriter, _ *http.Request) { http.Error(w, strings.Repeat("x", 5000), 503) }, kind: KindStatus, msgHas: "HTTP 503"},
		{name: "bad query", answer: func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(400)
			fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"parse error"}`)
		}, kind: KindQuery, msgHas: "bad_data: parse error"},
		{name: "garbage", answer: func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "<html>proxy login</html>") }, kind: KindGarbage, msgHas: "not a Prometheus API answer"},
		{name: "wrong type", answer: func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
		}, kind: KindGarbage, msgHas: "want a vector"},
		{name: "bad value", answer: func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, vector(`{"metric":{},"value":[1,"fast"]}`))
		}, kind: KindGarbage, msgHas: "not a number"},
		{name: "too much", answer: func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, vector(strings.Repeat(sample("a", "m", "1")+",", 2000)+sample("a", "m", "1")))
		}, kind: KindGarbage, msgHas: "an answer over"},
		{name: "partial", answer: func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, `{"status":"success","warnings":["store eu-1 did not answer"],"data":{"resultType":"vector","result":[]}}`)
		}, partial: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := tt.base
			release = make(chan struct{})
			if base == "" {
				srv := httptest.NewServer(http.HandlerFunc(tt.answer))
				defer srv.Close()
				base = srv.URL
			}
			defer close(release)
			// Only the slow case waits its timeout out; the others get
			// one no loaded machine reaches, so they fail for their fault.
			timeout := 10 * time.Second
			if tt.kind == KindTimeout {
				timeout = 200 * time.Millisecond
			}
			c, err := NewClient(base, Options{Timeout: timeout, MaxAnswer: 64 << 10})
			if err != nil {
				t.Fatal(err)
			}
			v, err := NewService(c, Config{}).View(context.Background(), Request{})
			var qe *QueryError
			switch {
			case tt.kind == "" && err != nil:
				t.Fatalf("err %v", err)
			case tt.kind != "" && (!errors.As(err, &qe) || qe.Kind != tt.kind || !strings.Contains(qe.Message, tt.msgHas) || len(qe.Message) > 2*maxMessage):
				t.Fatalf("err %#v, want kind %s with %q", err, tt.kind, tt.msgHas)
			case tt.kind == "" && (v.Partial != tt.partial || (tt.partial && v.Warnings[0] != "store eu-1 did not answer")):
				t.Fatalf("view %+v, want partial %v", v, tt.partial)
			}
		})
	}
}

// The route: off without --fleet, the view, a refused request, and a
// failing query API said in the API's error form.
func TestRoute(t *testing.T) {
	up, _ := fakeAPI(t, func(w http.ResponseWriter, _ string) { fmt.Fprint(w, vector()) })
	down, _ := fakeAPI(t, func(w http.ResponseWriter, _ string) { http.Error(w, "no", 502) })
	service := func(base string) *Service {
		c, err := NewClient(base, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return NewService(c, Config{})
	}
	tests := []struct {
		name   string
		s      *Service
		query  string
		status int
		body   string
	}{
		{"off", nil, "", 200, `"enabled":false`},
		{"on", service(up.URL), "?range=6h", 200, `"enabled":true`},
		{"bad range", service(up.URL), "?range=1w", 400, `"type":"invalid_request_error"`},
		{"API failing", service(down.URL), "", 502, `"message":"the fleet's query API: HTTP 502`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := server.New(server.Options{}, server.Route{Method: "GET", Path: "/api/metrics/fleet", Handler: Feature{S: tt.s}.Handle})
			res, err := app.Test(httptest.NewRequest("GET", "/api/metrics/fleet"+tt.query, nil), -1)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.status || !strings.Contains(string(body), tt.body) || !json.Valid(body) {
				t.Fatalf("%d %s, want %d with %s", res.StatusCode, body, tt.status, tt.body)
			}
		})
	}
}

func TestNewClientRefuses(t *testing.T) {
	for _, base := range []string{"", "ftp://h", "http://u:p@h", "http://h?x=1", "h:9090", "http://"} {
		if _, err := NewClient(base, Options{}); err == nil {
			t.Errorf("NewClient(%q) accepted", base)
		}
	}
	if c, err := NewClient("https://mimir.example/prometheus/", Options{}); err != nil || c.URL() != "https://mimir.example/prometheus" {
		t.Errorf("a path under the API root: %v %v", c, err)
	}
}

// Requests for a view being computed share it; a failure is reused for
// CacheFor like an answer; past maxFlights distinct views waiting, the
// answer is ErrBusy; a waiter whose context ends stops waiting, and the
// view it asked for is still computed.
func TestFlights(t *testing.T) {
	release := make(chan struct{})
	var asked sync.WaitGroup
	asked.Add(1)
	var first sync.Once
	srv, _ := fakeAPI(t, func(w http.ResponseWriter, _ string) {
		first.Do(asked.Done)
		<-release
		http.Error(w, "down", 503)
	})
	// Queries are counted as sent: the server may still be running the
	// handlers of those a failure cancelled.
	var sent atomic.Int64
	c, err := NewClient(srv.URL, Options{HTTP: &http.Client{Transport: countingTransport{&sent}}})
	if err != nil {
		t.Fatal(err)
	}
	s := NewService(c, Config{})
	wantDown := func(err error) {
		t.Helper()
		var qe *QueryError
		if !errors.As(err, &qe) || qe.Kind != KindStatus {
			t.Fatalf("err %v, want the API's 503", err)
		}
	}

	// Three asks of one view, which holds the computation's turn.
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := s.View(context.Background(), Request{})
			errs <- err
		}()
	}
	asked.Wait()
	// Other views, their asks given up at once: each still waits its turn.
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	others := make([]Request, maxFlights-1)
	for i := range others {
		others[i] = Request{Host: fmt.Sprint("h", i)}
		if _, err := s.View(gone, others[i]); !errors.Is(err, context.Canceled) {
			t.Fatalf("an ended wait: err %v", err)
		}
	}
	if _, err := s.View(context.Background(), Request{Model: "one too many"}); !errors.Is(err, ErrBusy) {
		t.Fatalf("past maxFlights: err %v, want ErrBusy", err)
	}

	close(release)
	for range 3 {
		wantDown(<-errs)
	}
	for _, r := range others {
		_, err := s.View(context.Background(), r) // joins its flight, or its cached failure
		wantDown(err)
	}
	// One query set per view: the first failure cancels the rest of its
	// set, so at most `parallel` queries each, never three sets for the
	// shared one.
	n := sent.Load()
	if n > maxFlights*parallel {
		t.Errorf("%d queries for %d views", n, maxFlights)
	}
	// The failure is reused within CacheFor: no query asked again.
	_, err = s.View(context.Background(), Request{})
	wantDown(err)
	if sent.Load() != n {
		t.Errorf("a repeated failing view asked %d queries more", sent.Load()-n)
	}
}

type countingTransport struct{ n *atomic.Int64 }

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// At most maxFresh views are computed anew in a CacheFor: a client asking
// for a new filter each time gets ErrBusy past them, views already
// computed are still answered, and the next CacheFor computes again.
func TestFreshViewsBounded(t *testing.T) {
	srv, seen := fakeAPI(t, func(w http.ResponseWriter, _ string) { io.WriteString(w, vector()) })
	c, err := NewClient(srv.URL, Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	s := NewService(c, Config{Now: func() time.Time { return now }})
	model := func(i int) Request { return Request{Model: fmt.Sprint("m", i)} }
	for i := range maxFresh {
		if _, err := s.View(context.Background(), model(i)); err != nil {
			t.Fatalf("view %d: %v", i, err)
		}
	}
	queries := len(*seen)
	if _, err := s.View(context.Background(), model(maxFresh)); !errors.Is(err, ErrBusy) {
		t.Fatalf("one view past maxFresh: err %v, want ErrBusy", err)
	}
	if _, err := s.View(context.Background(), model(0)); err != nil {
		t.Fatalf("a view computed already: %v", err)
	}
	if len(*seen) != queries {
		t.Fatalf("%d queries asked past the bound", len(*seen)-queries)
	}
	now = now.Add(DefaultCacheFor)
	if _, err := s.View(context.Background(), model(maxFresh)); err != nil {
		t.Fatalf("in the next CacheFor: %v", err)
	}
}

// A view is bounded by one Timeout from when it was first asked for, its
// wait for the computation's turn included: the views ahead of it, each
// taking up to a Timeout, do not add theirs (8 × --fleet-timeout before).
// Each query's context deadline says so, with no time let pass.
func TestViewBoundedAsAWhole(t *testing.T) {
	for _, ahead := range []int{1, maxFlights - 1} {
		t.Run(fmt.Sprint(ahead, " ahead"), func(t *testing.T) {
			release := make(chan struct{})
			var asked sync.WaitGroup
			asked.Add(1)
			var first sync.Once
			dl := &deadlines{byHost: map[string][]time.Time{}}
			srv, _ := fakeAPI(t, func(w http.ResponseWriter, _ string) {
				first.Do(asked.Done)
				<-release
				io.WriteString(w, vector())
			})
			const timeout = time.Hour // never reached: the deadlines are read
			c, err := NewClient(srv.URL, Options{Timeout: timeout, HTTP: &http.Client{Transport: dl}})
			if err != nil {
				t.Fatal(err)
			}
			s := NewService(c, Config{})
			done := make(chan error, ahead)
			go func() { _, err := s.View(context.Background(), Request{Host: "h0"}); done <- err }()
			asked.Wait()
			// The others are asked for while h0 holds the turn; their
			// asks given up at once, each view still waits its turn.
			gone, cancel := context.WithCancel(context.Background())
			cancel()
			for i := 1; i <= ahead; i++ {
				if _, err := s.View(gone, Request{Host: fmt.Sprint("h", i)}); !errors.Is(err, context.Canceled) {
					t.Fatalf("an ended wait: err %v", err)
				}
			}
			released := time.Now()
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= ahead; i++ {
				host := fmt.Sprint("h", i)
				if _, err := s.View(context.Background(), Request{Host: host}); err != nil {
					t.Fatalf("%s: %v", host, err)
				}
				if len(dl.of(host)) == 0 {
					t.Fatalf("%s asked nothing", host)
				}
				for _, d := range dl.of(host) {
					if d.IsZero() || !d.Before(released.Add(timeout)) {
						t.Fatalf("%s's queries have %s more than a timeout from when it was asked for",
							host, d.Sub(released.Add(timeout)))
					}
				}
			}
		})
	}
}

// deadlines records each query's context deadline by the host it filters.
type deadlines struct {
	mu     sync.Mutex
	byHost map[string][]time.Time
}

var hostFilter = regexp.MustCompile(`instance="([^"]*)"`)

func (d *deadlines) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	form, _ := url.ParseQuery(string(body))
	var host string
	if m := hostFilter.FindStringSubmatch(form.Get("query")); m != nil {
		host = m[1]
	}
	dl, _ := r.Context().Deadline() // zero without one: a failure too
	d.mu.Lock()
	d.byHost[host] = append(d.byHost[host], dl)
	d.mu.Unlock()
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	return http.DefaultTransport.RoundTrip(r)
}

func (d *deadlines) of(host string) []time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.byHost[host]
}

// A view whose time is up before it runs asks the API nothing.
func TestViewLateAsksNothing(t *testing.T) {
	srv, seen := fakeAPI(t, func(w http.ResponseWriter, _ string) { io.WriteString(w, vector()) })
	c, err := NewClient(srv.URL, Options{Timeout: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewService(c, Config{}).View(context.Background(), Request{})
	var qe *QueryError
	if !errors.As(err, &qe) || qe.Kind != KindTimeout || !strings.Contains(qe.Message, "no whole view within") {
		t.Fatalf("err %v, want the view's timeout", err)
	}
	if len(*seen) != 0 {
		t.Fatalf("%d queries asked", len(*seen))
	}
}

// A counter's rate is over the time its series has existed in the range,
// at most the range.
func TestRateOver(t *testing.T) {
	for _, tc := range []struct{ series, rng, want string }{
		{"x", "15m", "increase(x[15m]) / clamp(time() - min_over_time(timestamp(x)[15m:3s]), 1, 900)"},
		{`x{a="b"}`, "24h", `increase(x{a="b"}[24h]) / clamp(time() - min_over_time(timestamp(x{a="b"})[24h:360s]), 1, 86400)`},
		{"x", "10s", "increase(x[10s]) / clamp(time() - min_over_time(timestamp(x)[10s:1s]), 1, 10)"},
		{"x", "1d", "rate(x[1d])"}, // not a Go duration: the plain rate
	} {
		if got := rateOver(tc.series, tc.rng); got != tc.want {
			t.Errorf("rateOver(%s, %s) = %s, want %s", tc.series, tc.rng, got, tc.want)
		}
	}
}
