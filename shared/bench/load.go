package bench

// The load phase: many requests at once on a schedule, the serving
// benchmark a team decides with (how much load before latency breaks the
// SLO). Its definitions follow `vllm bench serve` where it has one;
// docs/bench-serve.md states each, and where a peer tool differs.

// PhaseLoad names the load phase in logs and problems.
const PhaseLoad = "load"

// Arrival processes of an open-loop load.
const (
	ArrivalPoisson  = "poisson"  // exponential gaps (the default)
	ArrivalGamma    = "gamma"    // gamma gaps, shape = Burstiness (1 is Poisson)
	ArrivalConstant = "constant" // equal gaps
)

// Workload kinds.
const (
	WorkloadRandom       = "random"        // generated prompts of the Input lengths
	WorkloadSharedPrefix = "shared-prefix" // random, a share opening with one of a few prefixes
	WorkloadShareGPT     = "sharegpt"      // a ShareGPT-format JSON file's first human turns
)

// Length distributions.
const (
	DistFixed   = "fixed"   // Tokens
	DistUniform = "uniform" // Min..Max inclusive
	DistNormal  = "normal"  // Mean and Std, rounded, at least 1
)

// Load is the load phase of a plan: a sweep of points, each a request
// rate (open loop) or a concurrency (closed loop), measured after warm-up
// requests that are not counted.
type Load struct {
	// Arrival is how an open loop spaces its requests (ArrivalPoisson when
	// empty); Burstiness is the gamma shape (1 when 0): under 1 burstier.
	Arrival    string  `json:"arrival,omitempty"`
	Burstiness float64 `json:"burstiness,omitempty"`
	// Rates (requests/s) make an open-loop sweep, Concurrencies a closed
	// one: one of them, or FindMaxRate.
	Rates         []float64 `json:"rates,omitempty"`
	Concurrencies []int     `json:"concurrencies,omitempty"`
	// MaxConcurrency caps an open loop's requests in flight: an arrival
	// past the cap waits for one to end (its wait is in its schedule lag,
	// told apart as capped).
	MaxConcurrency int `json:"maxConcurrency,omitempty"`
	// Requests counted per point; DurationMs instead sends for that long.
	// 200 requests when both are 0.
	Requests       int   `json:"requests,omitempty"`
	DurationMs     int64 `json:"durationMs,omitempty"`
	WarmupRequests int   `json:"warmupRequests,omitempty"`
	// Repeats measures each point this many times (1 when 0).
	Repeats int `json:"repeats,omitempty"`
	// Seed makes the request set and the arrivals reproducible; every
	// point and repeat still gets prompts no earlier one sent.
	Seed uint64 `json:"seed,omitempty"`
	// Endpoint is "completions" (default) or "chat/completions".
	Endpoint string   `json:"endpoint,omitempty"`
	Workload Workload `json:"workload"`
	// Goodput counts the requests meeting every SLO given.
	Goodput *SLO `json:"goodput,omitempty"`
	// FindMaxRate searches for the highest rate the server carries.
	FindMaxRate *FindMaxRate `json:"findMaxRate,omitempty"`
}

// Workload is what each request asks.
type Workload struct {
	Kind   string  `json:"kind,omitempty"` // WorkloadRandom when empty
	Input  Lengths `json:"input"`          // prompt tokens (random, shared-prefix)
	Output Lengths `json:"output"`         // max_tokens, ignore_eos asked for
	// Shared-prefix: Prefixes prefixes of PrefixTokens tokens, a
	// PrefixRatio share of requests opening with one (then Input more).
	Prefixes     int     `json:"prefixes,omitempty"`
	PrefixTokens int     `json:"prefixTokens,omitempty"`
	PrefixRatio  float64 `json:"prefixRatio,omitempty"`
	// File is a ShareGPT-format JSON file on the runner's machine (never
	// downloaded); Output, when set, replaces each conversation's answer
	// length as max_tokens.
	File string `json:"file,omitempty"`
}

// Lengths is a token-count distribution.
type Lengths struct {
	Dist   string  `json:"dist,omitempty"` // DistFixed when empty
	Tokens int     `json:"tokens,omitempty"`
	Min    int     `json:"min,omitempty"`
	Max    int     `json:"max,omitempty"`
	Mean   float64 `json:"mean,omitempty"`
	Std    float64 `json:"std,omitempty"`
}

// SLO is a request's service level: each bound in milliseconds, 0 unset.
// The names are vLLM's --goodput keys.
type SLO struct {
	TTFTMs float64 `json:"ttftMs,omitempty"`
	TPOTMs float64 `json:"tpotMs,omitempty"`
	E2ELMs float64 `json:"e2elMs,omitempty"`
}

// FindMaxRate searches open-loop rates: a doubling ladder from StartRate
// until a point fails, then bisection between the last that passed and
// the first that failed, MaxPoints in all. A point passes when its
// goodput (every completed request when no SLO is given) is at least
// MinShare of the offered rate and it was not saturated.
type FindMaxRate struct {
	StartRate float64 `json:"startRate,omitempty"` // 1 request/s when 0
	MinShare  float64 `json:"minShare,omitempty"`  // 0.95 when 0
	MaxPoints int     `json:"maxPoints,omitempty"` // 12 when 0
}

// LoadDefaults fills a load phase's zero fields.
func (l Load) Defaults() Load {
	if l.Arrival == "" && len(l.Concurrencies) == 0 {
		l.Arrival = ArrivalPoisson
	}
	if l.Burstiness == 0 {
		l.Burstiness = 1
	}
	if l.Requests == 0 && l.DurationMs == 0 {
		l.Requests = 200
	}
	if l.Repeats == 0 {
		l.Repeats = 1
	}
	if l.Endpoint == "" {
		l.Endpoint = "completions"
	}
	if l.Workload.Kind == "" {
		l.Workload.Kind = WorkloadRandom
	}
	if l.Workload.Kind != WorkloadShareGPT || l.Workload.Input != (Lengths{}) {
		l.Workload.Input = l.Workload.Input.defaults(128)
	}
	if l.Workload.Kind != WorkloadShareGPT || l.Workload.Output != (Lengths{}) {
		l.Workload.Output = l.Workload.Output.defaults(128)
	}
	if f := l.FindMaxRate; f != nil {
		g := *f
		if g.StartRate == 0 {
			g.StartRate = 1
		}
		if g.MinShare == 0 {
			g.MinShare = 0.95
		}
		if g.MaxPoints == 0 {
			g.MaxPoints = 12
		}
		l.FindMaxRate = &g
	}
	return l
}

func (n Lengths) defaults(tokens int) Lengths {
	if n.Dist == "" {
		n.Dist = DistFixed
	}
	if n.Dist == DistFixed && n.Tokens == 0 {
		n.Tokens = tokens
	}
	return n
}

// Met says whether a request's figures meet every bound of s.
func (s SLO) Met(ttftMs, tpotMs, e2elMs float64) bool {
	return (s.TTFTMs == 0 || ttftMs <= s.TTFTMs) &&
		(s.TPOTMs == 0 || tpotMs <= s.TPOTMs) &&
		(s.E2ELMs == 0 || e2elMs <= s.E2ELMs)
}

// LoadPoint is one measured point of a sweep: a rate or a concurrency,
// one repeat. Times in milliseconds, rates per second.
type LoadPoint struct {
	Point  int `json:"point"`  // 1-based, in the order measured
	Repeat int `json:"repeat"` // 1-based
	// Search is "ladder" or "bisect" for a FindMaxRate point.
	Search  string `json:"search,omitempty"`
	Arrival string `json:"arrival,omitempty"` // open loop only
	// OfferedRate is the schedule's rate (requests/s), 0 for a closed loop.
	OfferedRate float64 `json:"offeredRate,omitempty"`
	// Concurrency is a closed loop's streams, or an open loop's cap.
	Concurrency int `json:"concurrency,omitempty"`
	Requests    int `json:"requests"` // counted requests sent
	Completed   int `json:"completed"`
	Errors      int `json:"errors"`
	Warmup      int `json:"warmup,omitempty"`
	// DurationS is from the first counted request's scheduled time to the
	// last one's end (vLLM's benchmark duration: the drain included).
	DurationS float64 `json:"durationS"`
	// SendRate is the counted requests sent per second of the sending
	// (the rate achieved against the offered one).
	SendRate             float64 `json:"sendRate"`
	RequestThroughput    float64 `json:"requestThroughput"`
	OutputThroughput     float64 `json:"outputThroughput"`
	TotalTokenThroughput float64 `json:"totalTokenThroughput"`
	InputTokens          int64   `json:"inputTokens"`
	OutputTokens         int64   `json:"outputTokens"`
	TTFT                 Dist    `json:"ttftMs"`
	ITL                  Dist    `json:"itlMs"`
	TPOT                 Dist    `json:"tpotMs"`
	E2EL                 Dist    `json:"e2elMs"`
	// Lag is sent − scheduled: how late the client sent (a capped arrival
	// counts from when a slot freed).
	Lag Dist `json:"lagMs"`
	// Goodput is the requests/s meeting every SLO, null without one.
	Goodput      *float64 `json:"goodput,omitempty"`
	GoodRequests int      `json:"goodRequests,omitempty"`
	// Saturated: the server fell behind the offered rate (throughput
	// under it, or latency growing through the point).
	Saturated bool     `json:"saturated,omitempty"`
	Problems  []string `json:"problems,omitempty"`
	// RequestsFile is the per-request NDJSON, relative to the run
	// directory.
	RequestsFile string `json:"requestsFile,omitempty"`
}

// Dist summarises one figure over a point's requests: percentiles by
// Percentile (numpy's linear rule, as vLLM reports them).
type Dist struct {
	Count  int     `json:"count"`
	Mean   float64 `json:"mean"`
	Std    float64 `json:"std"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	P95    float64 `json:"p95"`
	P99    float64 `json:"p99"`
	P999   float64 `json:"p99_9"`
	// Sampled says the percentiles are over a uniform sample of the values
	// (more than MaxDistValues), the mean and std over all.
	Sampled bool `json:"sampled,omitempty"`
}

// MaxRate is what FindMaxRate found.
type MaxRate struct {
	// Rate is the highest offered rate that passed, 0 when none did.
	Rate float64 `json:"rate"`
	// FailedAt is the lowest rate that failed, 0 when none did.
	FailedAt float64 `json:"failedAt,omitempty"`
	MinShare float64 `json:"minShare"`
	Points   int     `json:"points"`
	Note     string  `json:"note,omitempty"`
}

// RequestRecord is one request of a load point, a line of the point's
// NDJSON. Times in milliseconds from the point's start.
type RequestRecord struct {
	Index       int     `json:"i"`
	Warmup      bool    `json:"warmup,omitempty"`
	ScheduledMs float64 `json:"scheduledMs"`
	// SlotMs is when a capped arrival got its slot (0 uncapped).
	SlotMs       float64   `json:"slotMs,omitempty"`
	SentMs       float64   `json:"sentMs"`
	TTFTMs       float64   `json:"ttftMs,omitempty"`
	ITLMs        []float64 `json:"itlMs,omitempty"`
	TPOTMs       float64   `json:"tpotMs,omitempty"`
	E2ELMs       float64   `json:"e2elMs,omitempty"`
	PromptTokens int64     `json:"promptTokens,omitempty"`
	OutputTokens int64     `json:"outputTokens,omitempty"`
	MaxTokens    int       `json:"maxTokens"`
	// ClientMs is the client's own share of TTFT (sending, the network,
	// reading): TTFT less the server's own received-to-first-token time,
	// where the server stamps it (the reference engine's server_timing).
	ClientMs float64 `json:"clientMs,omitempty"`
	Finish   string  `json:"finish,omitempty"`
	Error    string  `json:"error,omitempty"`
}
