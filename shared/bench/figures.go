package bench

// Figure describes one per-cell median a run reports, once for every place
// that shows it (the panel's tables and trends, the CLI, report.md, the
// CSV export) and for Compact, which computes it: its key, its name and
// unit for people, which way is better, where a compact cell holds it, and
// which phase's samples it is the median of.
type Figure struct {
	Key string // stable, for spreads and URLs
	// Field is the compact cell's JSON field holding the median, and the
	// CSV export's column.
	Field string
	Name  string
	Unit  string
	// HigherIsBetter is true for rates, false for times and sizes.
	HigherIsBetter bool
	// Memory marks a size: a change is more or less memory, not faster or
	// slower.
	Memory bool

	field func(*CompactCell) **float64
	// phase and sample say what the median is over; sample is nil for a
	// figure measured once a cell (cold start, peak RSS).
	phase  string
	sample func(Sample) float64
}

// Get is the figure's median in c; nil when it was not measured.
func (f Figure) Get(c CompactCell) *float64 { return *f.field(&c) }

// Spread is the least and the greatest of the samples the figure's median
// in c is over; false for a figure measured once, or a history entry from
// before spreads were kept.
func (f Figure) Spread(c CompactCell) (Range, bool) {
	r, ok := c.Spread[f.Key]
	return r, ok
}

// Range is the least and greatest of a figure's samples.
type Range struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// Figures are the medians of a compact cell, in the order tables list them.
var Figures = []Figure{
	{Key: "decode", Field: "decodeTokensPerSecond", Name: "decode", Unit: "tok/s", HigherIsBetter: true,
		field: func(c *CompactCell) **float64 { return &c.DecodeTokensPerSecond },
		phase: PhaseDecode, sample: func(s Sample) float64 { return s.DecodeTokensPerSecond }},
	{Key: "ttft_cold", Field: "ttftColdMs", Name: "cold TTFT", Unit: "ms",
		field: func(c *CompactCell) **float64 { return &c.TTFTColdMs },
		phase: PhaseColdTTFT, sample: func(s Sample) float64 { return s.TTFTMs }},
	{Key: "ttft_warm", Field: "ttftWarmMs", Name: "warm TTFT", Unit: "ms",
		field: func(c *CompactCell) **float64 { return &c.TTFTWarmMs },
		phase: PhaseWarmTTFT, sample: func(s Sample) float64 { return s.TTFTMs }},
	{Key: "prefill_1k", Field: "prefill1kTokensPerSecond", Name: "prefill 1k", Unit: "tok/s", HigherIsBetter: true,
		field: func(c *CompactCell) **float64 { return &c.Prefill1kTokensPerSecond },
		phase: PhaseColdTTFT, sample: func(s Sample) float64 { return s.PrefillTokensPerSecond }},
	{Key: "prefill_long", Field: "contextPrefillTokensPerSecond", Name: "long-context prefill", Unit: "tok/s", HigherIsBetter: true,
		field: func(c *CompactCell) **float64 { return &c.ContextPrefillTokensPerSecond },
		phase: PhaseLongContext, sample: func(s Sample) float64 { return s.PrefillTokensPerSecond }},
	{Key: "aggregate", Field: "aggregateTokensPerSecond", Name: "aggregate", Unit: "tok/s", HigherIsBetter: true,
		field: func(c *CompactCell) **float64 { return &c.AggregateTokensPerSecond },
		phase: PhaseConcurrent, sample: func(s Sample) float64 { return s.AggregateTokensPerSecond }},
	{Key: "cold_start", Field: "coldStartMs", Name: "cold start", Unit: "ms",
		field: func(c *CompactCell) **float64 { return &c.ColdStartMs }},
	{Key: "peak_rss", Field: "peakRssMB", Name: "peak RSS", Unit: "MiB", Memory: true,
		field: func(c *CompactCell) **float64 { return &c.PeakRssMB }},
}

// FigureByKey is the figure named key, or false.
func FigureByKey(key string) (Figure, bool) {
	for _, f := range Figures {
		if f.Key == key {
			return f, true
		}
	}
	return Figure{}, false
}
