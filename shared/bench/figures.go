package bench

// Figure describes one per-cell median a run reports, once for every place
// that shows it (the panel's tables and trends, the CLI, report.md, the
// CSV export): its key, its name and unit for people, which way is better,
// and where it is in a compact cell.
type Figure struct {
	Key  string // stable, for CSV headers and URLs
	Name string
	Unit string
	// HigherIsBetter is true for rates, false for times and sizes.
	HigherIsBetter bool
	Get            func(CompactCell) *float64
}

// Figures are the medians of a compact cell, in the order tables list them.
var Figures = []Figure{
	{"decode", "decode", "tok/s", true, func(c CompactCell) *float64 { return c.DecodeTokensPerSecond }},
	{"ttft_cold", "cold TTFT", "ms", false, func(c CompactCell) *float64 { return c.TTFTColdMs }},
	{"ttft_warm", "warm TTFT", "ms", false, func(c CompactCell) *float64 { return c.TTFTWarmMs }},
	{"prefill_1k", "prefill 1k", "tok/s", true, func(c CompactCell) *float64 { return c.Prefill1kTokensPerSecond }},
	{"prefill_long", "long-context prefill", "tok/s", true, func(c CompactCell) *float64 { return c.ContextPrefillTokensPerSecond }},
	{"aggregate", "aggregate", "tok/s", true, func(c CompactCell) *float64 { return c.AggregateTokensPerSecond }},
	{"cold_start", "cold start", "ms", false, func(c CompactCell) *float64 { return c.ColdStartMs }},
	{"peak_rss", "peak RSS", "MiB", false, func(c CompactCell) *float64 { return c.PeakRssMB }},
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
