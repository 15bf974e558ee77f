package load

import (
	"fmt"
	"math"
	"sort"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/plural"
)

// Thresholds of a point's problems.
const (
	// maxLagMs: a client sending later than this at p99 is measuring
	// itself, not the server.
	maxLagMs = 1.0
	// minSendShare: an open loop that sent under this share of its rate
	// did not offer the load it names.
	minSendShare = 0.95
	// saturatedShare: requests completing at under this share of the rate
	// they were sent at, the server is falling behind. Ends follow sends
	// a near-constant time later below saturation, so the two rates agree
	// within a few percent even over a few dozen requests.
	saturatedShare = 0.95
	// growth: the last quarter's median E2EL over the first's, past
	// which latency is growing through the point (a queue building up).
	growth = 2.0
	// maxErrorKinds bounds the distinct errors a point lists.
	maxErrorKinds = 3
)

// summary folds a point's records as they end into its LoadPoint.
type summary struct {
	p                     point
	load                  bench.Load
	ttft, itl, tpot, e2e  *bench.Collector
	lag                   *bench.Collector
	requests, completed   int
	errors, warmup, good  int
	short, noUsage        int
	inTok, outTok         int64
	firstSched, lastSched float64
	lastEnd               float64
	firstSent, lastSent   float64
	firstEnd              float64
	// e2eByIndex is each counted request's E2EL by its place in the
	// schedule (NaN for a failed one), for the growth check; bounded.
	e2eByIndex []float32
	errKinds   map[string]int
}

func newSummary(p point, l bench.Load) *summary {
	seed := l.Seed ^ uint64(p.index)<<20 ^ uint64(p.repeat)
	c := func(k uint64) *bench.Collector { return bench.NewCollector(0, seed+k) }
	return &summary{
		p: p, load: l,
		ttft: c(1), itl: c(2), tpot: c(3), e2e: c(4), lag: c(5),
		firstSched: math.Inf(1), firstSent: math.Inf(1), firstEnd: math.Inf(1),
		lastEnd: math.Inf(-1), lastSent: math.Inf(-1), lastSched: math.Inf(-1),
		errKinds: map[string]int{},
	}
}

func (s *summary) add(r bench.RequestRecord) {
	if r.Warmup {
		s.warmup++
		return
	}
	s.requests++
	s.firstSched, s.lastSched = math.Min(s.firstSched, r.ScheduledMs), math.Max(s.lastSched, r.ScheduledMs)
	if r.SentMs > 0 {
		s.firstSent, s.lastSent = math.Min(s.firstSent, r.SentMs), math.Max(s.lastSent, r.SentMs)
		from := r.ScheduledMs
		if r.SlotMs > from {
			from = r.SlotMs // a capped arrival's wait for a slot is the cap's, not lag
		}
		s.lag.Add(math.Max(0, r.SentMs-from))
	}
	idx := r.Index - s.load.WarmupRequests
	if idx >= 0 && idx < bench.MaxDistValues {
		for len(s.e2eByIndex) <= idx {
			s.e2eByIndex = append(s.e2eByIndex, float32(math.NaN()))
		}
	}
	if r.Error != "" {
		s.errors++
		if _, ok := s.errKinds[r.Error]; ok || len(s.errKinds) < maxErrorKinds {
			s.errKinds[r.Error]++
		}
		return
	}
	s.completed++
	end := r.SentMs + r.E2ELMs
	s.lastEnd, s.firstEnd = math.Max(s.lastEnd, end), math.Min(s.firstEnd, end)
	if idx >= 0 && idx < len(s.e2eByIndex) {
		s.e2eByIndex[idx] = float32(r.E2ELMs)
	}
	s.inTok += r.PromptTokens
	s.outTok += r.OutputTokens
	if r.OutputTokens == 0 {
		s.noUsage++
	} else if int(r.OutputTokens) < r.MaxTokens {
		s.short++
	}
	s.ttft.Add(r.TTFTMs)
	s.e2e.Add(r.E2ELMs)
	if r.OutputTokens > 1 {
		s.tpot.Add(r.TPOTMs)
	}
	for _, g := range r.ITLMs {
		s.itl.Add(g)
	}
	if slo := s.load.Goodput; slo != nil && slo.Met(r.TTFTMs, r.TPOTMs, r.E2ELMs) {
		s.good++
	}
}

// point is the summary as the run keeps it.
func (s *summary) point() bench.LoadPoint {
	p := bench.LoadPoint{
		Point: s.p.index, Repeat: s.p.repeat, Search: s.p.search,
		OfferedRate: s.p.rate, Concurrency: s.p.streams,
		Requests: s.requests, Completed: s.completed, Errors: s.errors, Warmup: s.warmup,
		InputTokens: s.inTok, OutputTokens: s.outTok,
		TTFT: s.ttft.Dist(), ITL: s.itl.Dist(), TPOT: s.tpot.Dist(), E2EL: s.e2e.Dist(), Lag: s.lag.Dist(),
	}
	if !s.p.closed() {
		p.Arrival = s.load.Arrival
	}
	if s.completed > 0 {
		p.DurationS = (s.lastEnd - s.firstSched) / 1000
	}
	if p.DurationS > 0 {
		p.RequestThroughput = float64(s.completed) / p.DurationS
		p.OutputThroughput = float64(s.outTok) / p.DurationS
		p.TotalTokenThroughput = float64(s.inTok+s.outTok) / p.DurationS
		if s.load.Goodput != nil {
			g := float64(s.good) / p.DurationS
			p.Goodput, p.GoodRequests = &g, s.good
		}
	}
	if n := s.requests; n > 1 && s.lastSent > s.firstSent {
		p.SendRate = float64(n-1) / ((s.lastSent - s.firstSent) / 1000)
	}
	p.Saturated = s.saturated(p)
	p.Problems = s.problems(p)
	return p
}

// scheduledRate is the counted requests per second of the schedule.
func (s *summary) scheduledRate() float64 {
	if s.requests < 2 || s.lastSched <= s.firstSched {
		return 0
	}
	return float64(s.requests-1) / ((s.lastSched - s.firstSched) / 1000)
}

// completionRate is the counted requests ending per second between the
// first end and the last: the rate the server serves at, without the
// start and the drain that the duration holds.
func (s *summary) completionRate() float64 {
	if s.completed < 2 || s.lastEnd <= s.firstEnd {
		return 0
	}
	return float64(s.completed-1) / ((s.lastEnd - s.firstEnd) / 1000)
}

// saturated: the requests ended slower than they were sent, or latency
// grew through the point (the last quarter's median E2EL over twice the
// first's). A closed loop cannot outrun its server, so only the growth
// counts there, and only past 8 requests.
func (s *summary) saturated(p bench.LoadPoint) bool {
	if !s.p.closed() && p.SendRate > 0 && s.completionRate() < saturatedShare*p.SendRate {
		return true
	}
	n := len(s.e2eByIndex)
	if n < 8 {
		return false
	}
	first, last := medianOf(s.e2eByIndex[:n/4]), medianOf(s.e2eByIndex[n-n/4:])
	return first > 0 && last > growth*first
}

// medianOf is the median of the values that are not NaN (0 for none).
func medianOf(xs []float32) float64 {
	var v []float64
	for _, x := range xs {
		if !math.IsNaN(float64(x)) {
			v = append(v, float64(x))
		}
	}
	sort.Float64s(v)
	return bench.Percentile(v, 50)
}

func (s *summary) problems(p bench.LoadPoint) []string {
	var out []string
	if s.requests == 0 {
		return []string{"no request was counted"}
	}
	if !s.p.closed() {
		if p.Lag.P99 > maxLagMs {
			out = append(out, fmt.Sprintf("the client fell behind its schedule: lag p99 %.2f ms (over %g ms)", p.Lag.P99, maxLagMs))
		}
		// Against the schedule's own rate: a random schedule of a few
		// requests runs well off its nominal rate by itself.
		if sched := s.scheduledRate(); s.requests >= 10 && sched > 0 && p.SendRate < minSendShare*sched {
			out = append(out, fmt.Sprintf("the client sent %.1f requests/s of the %.1f its schedule offered (under %.0f %%)", p.SendRate, sched, minSendShare*100))
		}
	}
	if s.errors > 0 {
		kinds := make([]string, 0, len(s.errKinds))
		for k := range s.errKinds {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		msg := fmt.Sprintf("%d of %s failed", s.errors, plural.Count(s.requests, "request", "requests"))
		for _, k := range kinds {
			msg += fmt.Sprintf("; %d× %s", s.errKinds[k], k)
		}
		out = append(out, msg)
	}
	if s.noUsage > 0 {
		out = append(out, fmt.Sprintf("%d of %d completed requests had no usage: their tokens are not counted, nor their TPOT", s.noUsage, s.completed))
	}
	if s.short > 0 {
		out = append(out, fmt.Sprintf("%d of %d completed requests generated fewer tokens than max_tokens: the server does not honour ignore_eos, so output lengths vary (the figures are over the tokens generated)", s.short, s.completed))
	}
	if p.Saturated {
		out = append(out, "saturated: the server fell behind the offered load (requests ending slower than sent, or latency growing through the point)")
	}
	return out
}
