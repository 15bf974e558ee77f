package bench

// HistoryEntry is the compact record of one finished run kept in history:
// per-cell medians, not samples. The full record stays in RunDirectory.
type HistoryEntry struct {
	ID           string        `json:"id"`
	Profile      string        `json:"profile"`
	Scope        string        `json:"scope"`
	StartedAt    int64         `json:"startedAt"`
	FinishedAt   int64         `json:"finishedAt"`
	DurationMs   int64         `json:"durationMs"`
	Complete     bool          `json:"complete"`
	ExitCode     int           `json:"exitCode"`
	Problems     []string      `json:"problems"`
	Machine      Machine       `json:"machine"`
	RunDirectory string        `json:"runDirectory"`
	Cells        []CompactCell `json:"cells"`
	// Source names the tool that measured an imported run ("vllm bench
	// serve 0.11.0"); empty for bench-serve's own.
	Source *Source `json:"source,omitempty"`
}

// Source is the tool and version that wrote an imported result.
type Source struct {
	Tool    string `json:"tool"`
	Version string `json:"version,omitempty"`
}

// CompactCell is one cell's medians; a figure that was not measured is null.
type CompactCell struct {
	Key           string     `json:"key"`
	Model         string     `json:"model"`
	Kind          string     `json:"kind"`
	Configuration string     `json:"configuration,omitempty"` // left out when empty, as the original
	Status        CellStatus `json:"status"`
	Note          string     `json:"note,omitempty"`
	// Attached: the run measured a server it did not start, so ColdStartMs
	// is null as not applicable rather than as not measured.
	Attached              bool     `json:"attached,omitempty"`
	DecodeTokensPerSecond *float64 `json:"decodeTokensPerSecond"`
	TTFTColdMs            *float64 `json:"ttftColdMs"`
	// TTFTWarmMs is the time to first token of a prompt the server has
	// seen: what its prefix cache saves, next to TTFTColdMs.
	TTFTWarmMs                    *float64 `json:"ttftWarmMs"`
	Prefill1kTokensPerSecond      *float64 `json:"prefill1kTokensPerSecond"`
	ContextPrefillTokensPerSecond *float64 `json:"contextPrefillTokensPerSecond"`
	AggregateTokensPerSecond      *float64 `json:"aggregateTokensPerSecond"`
	ColdStartMs                   *float64 `json:"coldStartMs"`
	PeakRssMB                     *float64 `json:"peakRssMB"`
	// Spread is, by figure key (Figures), the least and greatest of the
	// samples a median is over: what a comparison must look beyond.
	Spread map[string]Range `json:"spread,omitempty"`
	// LoadPoints and MaxRate are the load phase's, as the run measured them
	// (each point's requests stay in the run directory).
	LoadPoints []LoadPoint `json:"loadPoints,omitempty"`
	MaxRate    *MaxRate    `json:"maxRate,omitempty"`
	// SLO is the plan's goodput bounds of the load phase, on a cell with
	// load points: the panel draws them beside the curves.
	SLO *SLO `json:"slo,omitempty"`
	// Probes are the cell's parity probes (parity.go), for the pairs'
	// parity verdicts in every view.
	Probes []Probe `json:"probes,omitempty"`
}

// HistoryList is GET /history's body, newest first; in JSON the original's
// {runs} of RunView, with problems beside (api.go).
type HistoryList struct {
	Entries []HistoryEntry
	// Problems are the entries in the listed range that could not be read:
	// they are skipped, not fatal, and each can be removed by its id.
	Problems []HistoryProblem `json:"problems"`
	// Truncated says the list stopped short of its limit at MaxListBytes:
	// ask again with a lower limit, or for one run by its id.
	Truncated bool `json:"truncated,omitempty"`
}

// MaxListProblems bounds the unreadable entries one history list reports; the
// rest are counted in /healthz and found by asking for fewer runs.
const MaxListProblems = 100

// MaxListBytes bounds the runs one history list answers, encoded: a few
// runs of many cells and long texts would otherwise make one request cost
// gigabytes.
const MaxListBytes = 16 << 20

// HistoryProblem is one unreadable history entry.
type HistoryProblem struct {
	ID      string `json:"id"`
	Message string `json:"message"`
}
