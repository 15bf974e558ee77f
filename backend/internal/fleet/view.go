package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	shared "github.com/mlx-bun/mlx-metrics/shared/fleet"
)

// Ranges are the windows a view covers, as PromQL durations.
var Ranges = []string{"15m", "1h", "6h", "24h"}

// Request asks for one view: its range, and a host and a model to keep
// (all when empty).
type Request struct {
	Range string
	Host  string
	Model string
}

// Config configure a Service.
type Config struct {
	// HostLabel tells hosts apart: instance (the scrape's) or a label a
	// fleet's configuration sets (host).
	HostLabel string
	// TopRows bounds the rows a view lists (DefaultTopRows), by tokens/s;
	// the rest are summed into Others.
	TopRows int
	// CacheFor is how long a view is reused for the same request
	// (DefaultCacheFor), so panels refreshing at once cost one query set.
	CacheFor time.Duration
	Now      func() time.Time // time.Now when nil
	// Ranges are the windows a request may ask for (Ranges when nil):
	// tests of a fleet minutes old ask for seconds.
	Ranges []string
}

// Defaults of Config.
const (
	DefaultTopRows  = 20
	DefaultCacheFor = 5 * time.Second
	// MaxFilter bounds a host or model filter's length.
	MaxFilter = 256
	// parallel bounds the queries of one view in flight at once.
	parallel = 4
	// maxFlights bounds the distinct views waiting to be computed, and
	// maxCached the views kept.
	maxFlights = 8
	maxCached  = 64
	// maxFresh bounds the views computed anew in one CacheFor: a client
	// asking for a new filter each time would otherwise have every request
	// cost a query set (a panel changes its filter a few times a minute).
	maxFresh = 16
)

// Service answers views from one query API.
type Service struct {
	c   *Client
	cfg Config

	turn    chan struct{} // holds the one view being computed
	mu      sync.Mutex    // guards cache, flights and the fresh count
	cache   map[Request]cached
	flights map[Request]*flight
	// fresh counts the views computed anew since freshSince, at most
	// maxFresh in a CacheFor.
	fresh      int
	freshSince time.Time
}

// cached is a computed view (its flight, done) and when it was computed.
type cached struct {
	*flight
	at time.Time
}

// NewService returns the fleet view of what c's API holds.
func NewService(c *Client, cfg Config) *Service {
	if cfg.HostLabel == "" {
		cfg.HostLabel = "instance"
	}
	if cfg.TopRows <= 0 {
		cfg.TopRows = DefaultTopRows
	}
	if cfg.CacheFor <= 0 {
		cfg.CacheFor = DefaultCacheFor
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Ranges == nil {
		cfg.Ranges = Ranges
	}
	return &Service{c: c, cfg: cfg, turn: make(chan struct{}, 1), cache: map[Request]cached{}, flights: map[Request]*flight{}}
}

// RequestError is a request the service refuses (a bad range or filter).
type RequestError struct{ Message string }

func (e *RequestError) Error() string { return e.Message }

// check fills in r's defaults and refuses what cannot be asked.
func (r Request) check(ranges []string) (Request, error) {
	if r.Range == "" {
		r.Range = ranges[0]
	}
	if !slices.Contains(ranges, r.Range) {
		return r, &RequestError{"range: want one of " + strings.Join(ranges, ", ")}
	}
	for _, f := range []struct{ name, v string }{{"host", r.Host}, {"model", r.Model}} {
		if len(f.v) > MaxFilter || !utf8.ValidString(f.v) {
			return r, &RequestError{fmt.Sprintf("%s: at most %d bytes of UTF-8", f.name, MaxFilter)}
		}
	}
	return r, nil
}

// figure is one query of a view: the figure it fills and its PromQL.
type figure struct {
	name string
	expr string
	set  func(r *shared.Row, v float64)
}

// latency is one quantile of one time a row lists.
type latency struct {
	name, family string // the figure; the histogram it is read from
	q            float64
	get          func(*shared.Row) **float64
}

// latencies are the nine quantile figures of a row.
var latencies = func() []latency {
	var ls []latency
	for _, t := range []struct {
		name, family string
		q            func(*shared.Row) *shared.Quantiles
	}{
		{"ttft", "mlx_time_to_first_token_seconds", func(r *shared.Row) *shared.Quantiles { return &r.TTFT }},
		{"tpot", "mlx_time_per_output_token_seconds", func(r *shared.Row) *shared.Quantiles { return &r.TPOT }},
		{"e2e", "mlx_e2e_request_latency_seconds", func(r *shared.Row) *shared.Quantiles { return &r.E2E }},
	} {
		for _, p := range []struct {
			name string
			q    float64
			get  func(*shared.Quantiles) **float64
		}{{"p50", 0.5, func(q *shared.Quantiles) **float64 { return &q.P50 }}, {"p95", 0.95, func(q *shared.Quantiles) **float64 { return &q.P95 }},
			{"p99", 0.99, func(q *shared.Quantiles) **float64 { return &q.P99 }}} {
			ls = append(ls, latency{t.name + "." + p.name, t.family, p.q, func(r *shared.Row) **float64 { return p.get(t.q(r)) }})
		}
	}
	return ls
}()

// set is a figure's setter: the field get points to takes a sample's
// value, nil where it is not finite.
func set(get func(*shared.Row) **float64) func(*shared.Row, float64) {
	return func(row *shared.Row, v float64) { *get(row) = finite(v) }
}

// tokensQuery is r's tokens/s by (host, model): a figure, and what orders
// the rows.
func (s *Service) tokensQuery(r Request) string {
	h := s.cfg.HostLabel
	return "sum by (" + h + ", model_name) (" + rateOver("mlx_generation_tokens_total"+selector(h, r.Host, r.Model), r.Range) + ")"
}

// rateOver is a counter's per-second rate over the range, or over the
// part of it its series has existed: rate() divides by the whole range,
// so a store that holds three minutes of a host reads a fifth of its rate
// over 15 minutes. The increase is divided instead by the time since the
// series' first sample in the range (found by a subquery of about 240
// steps), at most the range.
func rateOver(series, rng string) string {
	d, err := time.ParseDuration(rng)
	if err != nil || d <= 0 {
		return "rate(" + series + "[" + rng + "])"
	}
	step := max(time.Second, (d / 240).Truncate(time.Second))
	return fmt.Sprintf("increase(%s[%s]) / clamp(time() - min_over_time(timestamp(%s)[%s:%ds]), 1, %d)",
		series, rng, series, rng, int(step.Seconds()), int(d.Seconds()))
}

// queries are a view's queries for r, figures by (host, model).
func (s *Service) queries(r Request) (hosts, reporting string, figs []figure) {
	h := s.cfg.HostLabel
	sel := selector(h, r.Host, r.Model)
	hostSel := selector(h, r.Host, "")
	by := "sum by (" + h + ", model_name) "
	figs = []figure{
		{"tokensPerSecond", s.tokensQuery(r), set(func(r *shared.Row) **float64 { return &r.TokensPerSecond })},
		{"requestsPerSecond", by + "(" + rateOver("mlx_request_success_total"+sel, r.Range) + ")", set(func(r *shared.Row) **float64 { return &r.RequestsPerSecond })},
		{"errors", by + "(increase(mlx_request_errors_total" + sel + "[" + r.Range + "]))", set(func(r *shared.Row) **float64 { return &r.Errors })},
		{"kvUsage", "max by (" + h + ", model_name) (mlx_kv_cache_usage_ratio" + sel + ")", set(func(r *shared.Row) **float64 { return &r.KVUsage })},
		{"queueDepth", by + "(mlx_num_requests_waiting" + sel + ")", set(func(r *shared.Row) **float64 { return &r.QueueDepth })},
	}
	for _, l := range latencies {
		figs = append(figs, figure{l.name, fmt.Sprintf("histogram_quantile(%g, sum by (%s, model_name, le) (rate(%s_bucket%s[%s])))",
			l.q, h, l.family, sel, r.Range), set(l.get)})
	}
	hosts = "max by (" + h + ", version) (last_over_time(mlx_build_info" + hostSel + "[" + r.Range + "]))"
	reporting = "max by (" + h + ") (mlx_build_info" + hostSel + ")"
	return hosts, reporting, figs
}

// othersQueries are the latencies of the rows beyond the top ones: the
// quantiles of their histograms summed, which is what a time of them all
// is (times do not sum, buckets do). The top rows are those topk picks by
// tokens/s; rows tied with the last of them (idle ones, mostly, whose
// histograms hold nothing over the range) may be picked otherwise than
// the list's order by name.
func (s *Service) othersQueries(r Request, top int) []figure {
	sel := selector(s.cfg.HostLabel, r.Host, r.Model)
	notTop := fmt.Sprintf("unless on (%s, model_name) topk(%d, %s)", s.cfg.HostLabel, top, s.tokensQuery(r))
	figs := make([]figure, 0, len(latencies))
	for _, l := range latencies {
		figs = append(figs, figure{"others." + l.name, fmt.Sprintf("histogram_quantile(%g, sum by (le) (rate(%s_bucket%s[%s]) %s))",
			l.q, l.family, sel, r.Range, notTop), set(l.get)})
	}
	return figs
}

// selector is a label selector keeping host and model when set.
func selector(hostLabel, host, model string) string {
	var m []string
	if host != "" {
		m = append(m, hostLabel+"="+strconv.Quote(host))
	}
	if model != "" {
		m = append(m, "model_name="+strconv.Quote(model))
	}
	if len(m) == 0 {
		return ""
	}
	return "{" + strings.Join(m, ", ") + "}"
}

// View answers r: every host the API has seen over the range, reporting
// or not, and its figures by model. A query that fails fails the view,
// with the failure's *QueryError; warnings mark it partial.
//
// Views are computed one at a time, so the query API sees at most
// `parallel` queries from this backend; requests for a view being
// computed wait for it (ctx ends the wait, not the computation), at most
// one query timeout from when the view was first asked for, and
// answers, failures too, are reused for CacheFor: panels refreshing at
// once, or a query API that is down, cost one query set per CacheFor. At
// most maxFresh views are computed anew in a CacheFor.
func (s *Service) View(ctx context.Context, r Request) (shared.View, error) {
	r, err := r.check(s.cfg.Ranges)
	if err != nil {
		return shared.View{}, err
	}
	s.mu.Lock()
	if c, ok := s.cache[r]; ok && s.cfg.Now().Sub(c.at) < s.cfg.CacheFor {
		s.mu.Unlock()
		return c.view, c.err
	}
	f, ok := s.flights[r]
	if !ok {
		if now := s.cfg.Now(); now.Sub(s.freshSince) >= s.cfg.CacheFor {
			s.fresh, s.freshSince = 0, now
		}
		if len(s.flights) >= maxFlights || s.fresh >= maxFresh {
			s.mu.Unlock()
			return shared.View{}, ErrBusy
		}
		s.fresh++
		f = &flight{done: make(chan struct{})}
		var within context.Context
		within, f.cancel = context.WithTimeout(context.Background(), s.c.Timeout())
		s.flights[r] = f
		go s.fly(within, r, f)
	}
	s.mu.Unlock()
	select {
	case <-f.done:
		return f.view, f.err
	case <-ctx.Done():
		return shared.View{}, ctx.Err()
	}
}

// ErrBusy is the answer while maxFlights distinct views wait to be
// computed, or once maxFresh were computed in a CacheFor: what waits, and
// what the query API is asked, is bounded whatever clients ask.
var ErrBusy = errors.New("the fleet view is busy with other requests; try again in a few seconds")

// flight is one view being computed, for every request that wants it.
type flight struct {
	done   chan struct{} // closed when view and err are set
	view   shared.View
	err    error
	cancel context.CancelFunc // ends the view's time once fly is done
}

// fly computes r's view in its turn, caches it and hands it to f's
// waiters. It runs apart from any request, so a client that goes does not
// cancel what others wait for. ctx, one query timeout from when the view
// was first asked for, bounds the whole view, its wait for the turn
// included: queries that each answer just in time, a few at a time, or
// the views ahead of it in turn, would otherwise hold it several timeouts
// (maxFlights of them). A view whose time is up before its turn asks
// nothing.
func (s *Service) fly(ctx context.Context, r Request, f *flight) {
	defer f.cancel()
	var now time.Time
	select {
	case s.turn <- struct{}{}:
		now = s.cfg.Now()
		f.view, f.err = s.compute(ctx, r, now)
		<-s.turn
	case <-ctx.Done():
		now, f.err = s.cfg.Now(), s.late()
	}
	close(f.done)
	s.mu.Lock()
	delete(s.flights, r)
	if len(s.cache) >= maxCached {
		clear(s.cache) // a few filters are asked for; bound what odd ones cost
	}
	s.cache[r] = cached{f, now}
	s.mu.Unlock()
}

func (s *Service) compute(ctx context.Context, r Request, now time.Time) (shared.View, error) {
	hostsQ, reportingQ, figs := s.queries(r)
	v := shared.View{Enabled: true, Source: s.c.URL(), HostLabel: s.cfg.HostLabel, Range: r.Range, At: now.UnixMilli(),
		Hosts: []shared.Host{}, Rows: []shared.Row{}, Queries: map[string]string{"hosts": hostsQ, "reporting": reportingQ}}
	answers, err := s.ask(ctx, append([]string{hostsQ, reportingQ}, noted(figs, &v)...), &v)
	if err != nil {
		return shared.View{}, err
	}

	h := s.cfg.HostLabel
	reporting := map[string]bool{}
	for _, smp := range answers[1] {
		reporting[smp.Labels[h]] = true
	}
	seen := map[string]bool{}
	for _, smp := range answers[0] {
		host := smp.Labels[h]
		if seen[host] {
			continue
		}
		seen[host] = true
		v.Hosts = append(v.Hosts, shared.Host{Host: host, Reporting: reporting[host], Version: smp.Labels["version"]})
	}
	rows := map[[2]string]*shared.Row{}
	for i, f := range figs {
		for _, smp := range answers[2+i] {
			key := [2]string{smp.Labels[h], smp.Labels["model_name"]}
			row := rows[key]
			if row == nil {
				row = &shared.Row{Host: key[0], Model: key[1]}
				rows[key] = row
			}
			f.set(row, smp.Value)
		}
	}
	for host := range reporting {
		if !seen[host] {
			v.Hosts = append(v.Hosts, shared.Host{Host: host, Reporting: true})
			seen[host] = true
		}
	}
	for key := range rows {
		if !seen[key[0]] {
			// Figures of a host whose build info is older than the range:
			// a host all the same, reporting as far as the API says.
			v.Hosts = append(v.Hosts, shared.Host{Host: key[0], Reporting: reporting[key[0]]})
			seen[key[0]] = true
		}
	}
	sort.Slice(v.Hosts, func(i, j int) bool { return v.Hosts[i].Host < v.Hosts[j].Host })
	all := make([]shared.Row, 0, len(rows))
	for _, r := range rows {
		all = append(all, *r)
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := orZero(all[i].TokensPerSecond), orZero(all[j].TokensPerSecond)
		if a != b {
			return a > b
		}
		if all[i].Host != all[j].Host {
			return all[i].Host < all[j].Host
		}
		return all[i].Model < all[j].Model
	})
	if len(all) > s.cfg.TopRows {
		v.Others = sumRows(all[s.cfg.TopRows:])
		all = all[:s.cfg.TopRows]
		figs := s.othersQueries(r, s.cfg.TopRows)
		answers, err := s.ask(ctx, noted(figs, &v), &v)
		if err != nil {
			return shared.View{}, err
		}
		for i, f := range figs {
			if len(answers[i]) > 0 { // none: no request over the range
				f.set(v.Others, answers[i][0].Value)
			}
		}
	}
	v.Rows = all
	return v, nil
}

// noted is figs' queries, each noted in v.Queries under its figure's name.
func noted(figs []figure, v *shared.View) []string {
	exprs := make([]string, len(figs))
	for i, f := range figs {
		exprs[i] = f.expr
		v.Queries[f.name] = f.expr
	}
	return exprs
}

// ask runs exprs, at most parallel at once, and notes their warnings in
// v. The first query to fail fails them all: the rest are cancelled.
func (s *Service) ask(ctx context.Context, exprs []string, v *shared.View) ([][]Sample, error) {
	answers := make([][]Sample, len(exprs))
	warnings := make([][]string, len(exprs))
	// The first query to fail fails the view; the others it cancels fail
	// for that, which is not what to say.
	var first error
	var once sync.Once
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, e := range exprs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				// A query failed (so has the view), or the view's time is up.
				once.Do(func() { first = s.late() })
				return
			}
			var err error
			answers[i], warnings[i], err = s.c.Query(ctx, e)
			if err != nil {
				once.Do(func() { first = err; cancel() }) // the rest need not run
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	for _, w := range warnings {
		for _, msg := range w {
			if !slices.Contains(v.Warnings, msg) {
				v.Warnings = append(v.Warnings, msg)
			}
		}
	}
	v.Partial = len(v.Warnings) > 0
	return answers, nil
}

// late is the answer of a view whose time is up.
func (s *Service) late() error {
	return &QueryError{Kind: KindTimeout, Message: fmt.Sprintf("no whole view within %s", s.c.Timeout())}
}

func orZero(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// sumRows is the row of rows: rates, errors and queue depth summed, the
// greatest KV use; times do not sum (othersQueries asks for them).
func sumRows(rows []shared.Row) *shared.Row {
	o := &shared.Row{Rows: len(rows)}
	add := func(dst **float64, v *float64) {
		if v == nil {
			return
		}
		if *dst == nil {
			*dst = new(float64)
		}
		**dst += *v
	}
	for _, r := range rows {
		add(&o.TokensPerSecond, r.TokensPerSecond)
		add(&o.RequestsPerSecond, r.RequestsPerSecond)
		add(&o.Errors, r.Errors)
		add(&o.QueueDepth, r.QueueDepth)
		if r.KVUsage != nil && (o.KVUsage == nil || *r.KVUsage > *o.KVUsage) {
			o.KVUsage = r.KVUsage
		}
	}
	return o
}
