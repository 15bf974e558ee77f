package ui

import (
	"fmt"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/charts"
	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/plural"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// ServingView answers what a serving dashboard is opened for: throughput,
// latency (TTFT, TPOT, end to end), queue and batch, and the caches, as
// headline tiles, a per-model table when several models are resident, and
// a grid of charts over the timeline with model loads and swaps marked.
type ServingView struct {
	app.Compo

	Snap *snapshot.Snapshot
	// Windows are the frame's per-model windows, where Snap holds none
	// (decodeFrame).
	Windows *Windows
	Palette charts.Palette
	// Lease is the GPU lease as last read; a bench run holding the GPU is
	// shown above the tiles.
	Lease *bench.Lease
	// BenchRuns are when bench runs held the GPU (the jobs the backend
	// lists), shaded on the time charts.
	BenchRuns []charts.Span

	rows rowCap // the per-model table's bound
}

// Totals sums the latest scheduler sample of every model.
type Totals struct {
	TokensPerSecond float64
	Active          int
	Capacity        int
	Queued          int
}

// SchedulerTotals adds up the models' latest scheduler samples.
func SchedulerTotals(s *snapshot.Snapshot) Totals {
	var t Totals
	if s == nil {
		return t
	}
	for _, sc := range s.Schedulers {
		t.TokensPerSecond += sc.TokensPerSecond
		t.Active += sc.Active
		t.Capacity += sc.Capacity
		t.Queued += sc.Queued
	}
	return t
}

// RequestsPerSecond is the rate of finished requests over the timeline's
// last complete intervals (up to six: half a minute at 5 s), or over what
// there is when none has completed yet.
func RequestsPerSecond(s *snapshot.Snapshot) (rate float64, ok bool) {
	if s == nil || len(s.Timeline) == 0 || s.IntervalMs <= 0 {
		return 0, false
	}
	tl := s.Timeline
	end := len(tl)
	for end > 0 && tl[end-1].At+s.IntervalMs > s.At {
		end-- // still filling
	}
	if end == 0 {
		end = len(tl)
	}
	start := max(0, end-6)
	n := 0
	for _, pt := range tl[start:end] {
		n += pt.Requests
	}
	return float64(n) * 1000 / float64(int64(end-start)*s.IntervalMs), true
}

// ThroughputWindowMs is the span the Throughput tile averages over.
const ThroughputWindowMs = 30_000

// MeanThroughput is the tokens per second of the timeline's last complete
// intervals within ThroughputWindowMs (six at 5 s): the mean of their
// scheduler samples, each summed over the models (snapshot.IntervalScheduler).
// One sample jumps 83–184 tok/s between frames at the reference engine's
// default traffic. ok is false where those intervals hold no sample (an
// older backend's timeline, or an engine that stopped sampling).
func MeanThroughput(s *snapshot.Snapshot) (tps float64, ok bool) {
	if s == nil || s.IntervalMs <= 0 {
		return 0, false
	}
	var sum float64
	var n int
	end := s.At - s.At%s.IntervalMs // where the interval still filling began
	for _, pt := range s.Timeline {
		if pt.At+s.IntervalMs > end || pt.At < end-ThroughputWindowMs || pt.Scheduler == nil {
			continue // still filling, too old, or no sample
		}
		sum += pt.Scheduler.TokensPerSecond * float64(pt.Scheduler.Samples)
		n += pt.Scheduler.Samples
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// CacheTotals is the caches summed over models: KV bytes over capacity
// (or the mean reported ratio), and prefix hits over lookups since load.
func CacheTotals(s *snapshot.Snapshot) (kvUse, hitRate *float64) {
	if s == nil {
		return nil, nil
	}
	var used, capacity, hits, lookups int64
	var ratios float64
	var nRatios int
	for _, c := range s.Caches {
		if kv := c.KV; kv != nil {
			switch {
			case kv.CapacityBytes != nil && *kv.CapacityBytes > 0:
				used += kv.Bytes
				capacity += *kv.CapacityBytes
			case kv.UsageRatio != nil:
				ratios += *kv.UsageRatio
				nRatios++
			}
		}
		if p := c.Prefix; p != nil {
			hits += p.Hits
			lookups += p.Hits + p.Misses
		}
	}
	switch {
	case capacity > 0:
		v := float64(used) / float64(capacity)
		kvUse = &v
	case nRatios > 0:
		v := ratios / float64(nRatios)
		kvUse = &v
	}
	if lookups > 0 {
		v := float64(hits) / float64(lookups)
		hitRate = &v
	}
	return kvUse, hitRate
}

func (v *ServingView) Render() app.UI {
	s := v.Snap
	if s == nil {
		return app.Div().Class("view").ID("view-serving").Body(empty("Waiting for the first snapshot…"))
	}
	return app.Div().Class("view").ID("view-serving").Body(
		app.If(v.Lease != nil && v.Lease.Held, func() app.UI {
			return app.P().Class("banner").DataSet("lease", "held").Text(
				fmt.Sprintf("A bench-serve run (job %s) holds the GPU since %s: serving figures may reflect it.", v.Lease.Holder, format.Clock(v.Lease.Since)))
		}),
		app.Div().Class("tiles").Body(v.tiles(s)...),
		v.perModel(s),
		v.charts(s),
	)
}

// tiles are the headline figures, each from one snapshot field.
func (v *ServingView) tiles(s *snapshot.Snapshot) []app.UI {
	t := SchedulerTotals(s)
	w := s.Requests.Window
	q := func(d *snapshot.Distribution, p func(*snapshot.Distribution) float64) string {
		if d == nil {
			return format.Dash
		}
		return format.Ms(p(d))
	}
	p50 := func(d *snapshot.Distribution) float64 { return d.P50 }
	p95 := func(d *snapshot.Distribution) float64 { return d.P95 }
	p99 := func(d *snapshot.Distribution) float64 { return d.P99 }
	reqRate := format.Dash
	if r, ok := RequestsPerSecond(s); ok {
		reqRate = fmt.Sprintf("%.2f req/s", r)
	}
	occupancy, rowsHint := format.Dash, "no scheduler sample"
	if t.Capacity > 0 {
		occupancy = format.Percent(float64(t.Active) / float64(t.Capacity))
		rowsHint = fmt.Sprintf("%d of %s decoding", t.Active, plural.Count(t.Capacity, "row", "rows"))
	}
	kvUse, hitRate := CacheTotals(s)
	pct := func(v *float64) string {
		if v == nil {
			return format.Dash
		}
		return format.Percent(*v)
	}
	resident := 0
	for _, m := range s.Models {
		if m.State == snapshot.StateResident {
			resident++
		}
	}
	over := "last " + format.Count(int64(w.Count)) + " " + plural.Word(w.Count, "request", "requests")
	tps, tpsHint := t.TokensPerSecond, "latest sample, "+plural.Count(len(s.Schedulers), "model", "models")
	if mean, ok := MeanThroughput(s); ok {
		tps, tpsHint = mean, "mean of the last "+span(ThroughputWindowMs)+", "+plural.Count(len(s.Schedulers), "model", "models")
	}
	return []app.UI{
		tile("throughput", "Throughput", format.Rate(tps), tpsHint),
		tile("requests", "Requests", reqRate, format.Count(s.Requests.Finished)+" finished since start"),
		multiTile("ttft", "TTFT p50 · p95 · p99", []string{q(w.TTFTMs, p50), q(w.TTFTMs, p95), q(w.TTFTMs, p99)}, over),
		multiTile("tpot", "TPOT p50 · p95", []string{q(w.TPOTMs, p50), q(w.TPOTMs, p95)}, "per output token after the first"),
		multiTile("e2e", "E2E latency p50 · p95", []string{q(w.TotalMs, p50), q(w.TotalMs, p95)}, over),
		tile("queued", "Queue depth", format.Count(int64(t.Queued)), "requests waiting"),
		tile("rows", "Batch occupancy", occupancy, rowsHint),
		tile("kv", "KV cache use", pct(kvUse), "of the KV budget"),
		tile("prefix", "Prefix hit rate", pct(hitRate), "of prompt tokens looked up, since load"),
		// Two columns wide: seven single and three double tiles would leave
		// a hole in a grid of seven columns (1440 px) or two (a phone).
		wideTile("models", "Models resident", format.Count(int64(resident)), "of "+format.Count(int64(len(s.Models)))+" known"),
	}
}

// perModel breaks the figures down by model when more than one is
// resident.
func (v *ServingView) perModel(s *snapshot.Snapshot) app.UI {
	var rows []snapshot.Model
	for _, m := range s.Models {
		if m.State == snapshot.StateResident {
			rows = append(rows, m)
		}
	}
	if len(rows) < 2 {
		return nil
	}
	all := len(rows)
	rows = rows[:v.rows.shown(all)]
	sched := map[string]snapshot.Scheduler{}
	for _, sc := range s.Schedulers {
		sched[sc.Model] = sc
	}
	caches := map[string]snapshot.Cache{}
	for _, c := range s.Caches {
		caches[c.Model] = c
	}
	return section("By model",
		scrollTable("per-model",
			[]string{"Model", "Throughput", "Rows", "Queued", "TTFT p50", "TTFT p95", "TPOT p50", "KV use", "Prefix hits"},
			app.Range(rows).Slice(func(i int) app.UI {
				m := rows[i]
				sc, sampled := sched[m.Model]
				one := &snapshot.Snapshot{Caches: []snapshot.Cache{caches[m.Model]}}
				kv, hit := CacheTotals(one)
				w := modelWindow(s, v.Windows, m.Model)
				dist := func(d func(*snapshot.Window) *snapshot.Distribution, q func(*snapshot.Distribution) float64) string {
					if w == nil || d(w) == nil {
						return format.Dash
					}
					return format.Ms(q(d(w)))
				}
				ttft := func(w *snapshot.Window) *snapshot.Distribution { return w.TTFTMs }
				tpot := func(w *snapshot.Window) *snapshot.Distribution { return w.TPOTMs }
				rate, rowsText, queued := format.Dash, format.Dash, format.Dash
				if sampled {
					rate = format.Rate(sc.TokensPerSecond)
					rowsText = fmt.Sprintf("%d / %d", sc.Active, sc.Capacity)
					queued = itoa(sc.Queued)
				}
				pct := func(v *float64) string {
					if v == nil {
						return format.Dash
					}
					return format.Percent(*v)
				}
				return app.Tr().DataSet("model", m.Model).Body(
					app.Td().Body(modelName(m.Model)),
					app.Td().Class("num").Text(rate),
					app.Td().Class("num").Text(rowsText),
					app.Td().Class("num").Text(queued),
					app.Td().Class("num").Text(dist(ttft, func(d *snapshot.Distribution) float64 { return d.P50 })),
					app.Td().Class("num").Text(dist(ttft, func(d *snapshot.Distribution) float64 { return d.P95 })),
					app.Td().Class("num").Text(dist(tpot, func(d *snapshot.Distribution) float64 { return d.P50 })),
					app.Td().Class("num").Text(pct(kv)),
					app.Td().Class("num").Text(pct(hit)),
				)
			}),
		),
		v.rows.more("per-model", all, "resident models"),
	)
}

// span is a chart's window or resolution in words: "5 s", "10 min",
// "2 min 30 s".
func span(ms int64) string {
	if ms >= 60_000 && ms%60_000 == 0 {
		return fmt.Sprintf("%d min", ms/60_000)
	}
	return format.Whole(time.Duration(ms) * time.Millisecond)
}

// ChartNotes are the captions of the Serving view's charts, by chart ID:
// what each covers (its window and resolution), how its quantiles are
// taken, and once, where the timeline has one, what the shade of a
// stretch without a finished request means.
func ChartNotes(s *snapshot.Snapshot) map[string]string {
	tl := s.Timeline
	window := span(max(int64(len(tl))*s.IntervalMs, charts.MinWindowMs))
	each := "each " + span(s.IntervalMs)
	last := "; the last " + window + "."
	quiet := ""
	if len(charts.Quiet(tl)) > 0 {
		quiet = " Shaded: no request finished."
	}
	p99 := "p99 of the minute to it where it holds " + fmt.Sprint(charts.MinP99Requests) + " or more"
	if charts.P99Name(tl) == "p99" {
		p99 = "p99 where " + fmt.Sprint(charts.MinP99Requests) + " or more finished in it"
	}
	latency := "p50 and p95 of the requests finished in " + each + ", " + p99 + last + quiet
	prefix := "prefix hits over the lookups of the minute to it"
	if charts.PrefixName(tl) == "prefix hit rate" {
		prefix = "prefix hits over the lookups of " + each
	}
	throughput := "Mean tokens/s of " + each + ", rows and queue as of its last sample" + last
	if !charts.SchedulerPerInterval(tl) {
		throughput = "The scheduler's last " + plural.Count(len(s.Series), "sample", "samples") + "."
	}
	return map[string]string{
		"chart-throughput":  throughput,
		"chart-token-rates": "Tokens of the requests finished in " + each + last,
		"chart-ttft":        latency,
		"chart-tpot":        latency,
		"chart-e2e":         latency,
		"chart-queue":       latency,
		"chart-phases":      "p50 and p95 of the requests finished in " + each + last + quiet,
		"chart-finish":      "Requests finished in " + each + last,
		"chart-cache":       "KV use as of " + each + ", " + prefix + last,
		"chart-lengths":     "The last " + plural.Count(s.Requests.Window.Count, "request", "requests") + ".",
	}
}

// servingChart is one chart of the Serving view's grid: has says whether
// there is anything to draw, option builds what ECharts draws.
type servingChart struct {
	id, title, label string
	has              bool
	option           func() []byte
}

// chartList is the Serving view's charts, in the grid's order.
func (v *ServingView) chartList(s *snapshot.Snapshot) []servingChart {
	tl, marks, pal := s.Timeline, s.Marks, v.Palette
	hasTimeline := len(tl) > 0
	// The time a bench run held the GPU is shaded on every time chart, while
	// it runs and after: those figures are the benchmark's.
	timed := func(id, title, label string, has bool, option func() *charts.Option) servingChart {
		return servingChart{id, title, label, has, func() []byte { return charts.WithBench(option(), v.BenchRuns, pal).JSON() }}
	}
	latency := func(id, title, label string, t charts.Timing) servingChart {
		return timed(id, title, label, hasTimeline, func() *charts.Option { return charts.Latency(tl, marks, t, "ms", pal) })
	}
	return []servingChart{
		timed("chart-throughput", "Tokens per second, batch rows and queue", "tokens per second, active rows and queue depth over time",
			len(s.Series) > 0 || charts.SchedulerPerInterval(tl), func() *charts.Option { return charts.Throughput(s.Series, tl, marks, pal) }),
		timed("chart-token-rates", "Prompt and generation tokens per second", "prompt and generation tokens per second of the requests finished, over time", hasTimeline,
			func() *charts.Option { return charts.TokenRates(tl, s.IntervalMs, marks, pal) }),
		latency("chart-ttft", "Time to first token", "TTFT p50, p95 and p99 over time", charts.TTFT),
		latency("chart-tpot", "Time per output token", "TPOT p50, p95 and p99 over time", charts.TPOT),
		latency("chart-e2e", "End-to-end latency", "request latency p50, p95 and p99 over time", charts.E2E),
		latency("chart-queue", "Queue time", "queue time p50, p95 and p99 over time", charts.Queue),
		timed("chart-phases", "Prefill and decode time", "prefill time (TTFT less the queue) and decode time, p50 and p95, over time", hasTimeline,
			func() *charts.Option { return charts.Phases(tl, marks, pal) }),
		timed("chart-finish", "Requests per second by finish reason", "finished requests per second by finish reason over time", hasTimeline,
			func() *charts.Option { return charts.FinishRate(tl, s.IntervalMs, marks, pal) }),
		timed("chart-cache", "KV cache use and prefix hit rate", "KV cache use and prefix-cache hit rate over time", hasTimeline,
			func() *charts.Option { return charts.CacheUse(tl, marks, pal) }),
		{"chart-lengths", "Prompt and generation length", "the window's requests by prompt and by generation length in tokens",
			s.Requests.Window.Lengths != nil, func() []byte { return charts.Lengths(s.Requests.Window.Lengths, pal).JSON() }},
	}
}

// Redraw is the shortest time between two redraws of a chart that follows
// the stream (Chart.Every): the Serving view's charts, whose points are 1 s
// (the throughput's) and 5 s (the timeline's) apart, and the Caches view's
// gauges; the stream's frames come twice a second.
const Redraw = time.Second

// charts is the grid of charts: two columns where the width allows, each
// with its caption (ChartNotes).
func (v *ServingView) charts(s *snapshot.Snapshot) app.UI {
	list, notes := v.chartList(s), ChartNotes(s)
	return app.Div().Class("chart-grid").Body(app.Range(list).Slice(func(i int) app.UI {
		c := list[i]
		return app.Section().Class("card chart-card").DataSet("chart-card", c.id).Body(
			app.H2().Text(c.title),
			app.If(!c.has, func() app.UI { return empty("Nothing measured yet.") }).
				Else(func() app.UI {
					return app.Div().Body(
						app.P().Class("chart-note").DataSet("note", c.id).Text(notes[c.id]),
						&Chart{ID: c.id, Label: c.label, Build: c.option, Every: Redraw},
					)
				}),
		)
	}))
}

// staleNote says the figures are no longer live, and as of when (the
// panel greys them meanwhile).
func staleNote(stale bool, s *snapshot.Snapshot) app.UI {
	if !stale || s == nil {
		return nil
	}
	return app.P().Class("stale-note").DataSet("stale", "true").Text(
		"Not live: every figure below is as of " + format.Clock(s.At) + ", when the stream was last heard from.")
}
