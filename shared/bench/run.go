package bench

// Machine is where a run ran.
type Machine struct {
	Chip        string `json:"chip"`
	MemoryBytes int64  `json:"memoryBytes"`
	Host        string `json:"host"`
	OS          string `json:"os"`
	// GPU is the probe's word on the accelerator ("no GPU found" without one).
	GPU string `json:"gpu,omitempty"`
}

// Run phases, as Sample.Phase.
const (
	PhaseColdStart   = "cold-start"
	PhaseDecode      = "decode"
	PhaseColdTTFT    = "cold-ttft"
	PhaseWarmTTFT    = "warm-ttft"
	PhaseLongContext = "long-context"
	PhaseConcurrent  = "concurrent"
)

// CellStatus is how a cell's measurement ended; JSON "status".
type CellStatus string

// Cell statuses.
const (
	CellMeasured CellStatus = "measured"
	CellSkipped  CellStatus = "skipped"
	CellFailed   CellStatus = "failed"
)

// Sample is one measured request (or one concurrent batch, for the
// concurrent phase). Token counts come from the server's usage, never from
// the request.
type Sample struct {
	Phase                  string  `json:"phase"`
	Run                    int     `json:"run"`
	Attempt                int     `json:"attempt"`
	Endpoint               string  `json:"endpoint,omitempty"`
	PromptTokens           int64   `json:"promptTokens"`
	CompletionTokens       int64   `json:"completionTokens"`
	TTFTMs                 float64 `json:"ttftMs"`
	TotalMs                float64 `json:"totalMs"`
	PrefillTokensPerSecond float64 `json:"prefillTokensPerSecond,omitempty"`
	DecodeTokensPerSecond  float64 `json:"decodeTokensPerSecond,omitempty"`
	// AggregateTokensPerSecond is set on concurrent samples: all streams'
	// completion tokens over the batch's wall time.
	AggregateTokensPerSecond float64 `json:"aggregateTokensPerSecond,omitempty"`
	// Stamped says the times are the kernel's receive times of the chunks
	// (Linux), not when the runner read them: the runner's own wait for a
	// core is out of TTFT and the rates. Every stream's, for concurrent.
	Stamped bool   `json:"stamped,omitempty"`
	Error   string `json:"error,omitempty"`
	// Note says what a measured sample met of a real server's ways: an
	// early stop (its rates over the tokens generated), a prompt the
	// server truncated, several tokens a chunk.
	Note string `json:"note,omitempty"`
	// RequestHash identifies what the sample's request asked (its body
	// but the model name; the concurrent streams' bodies together): cells
	// of one model are sent the same requests, and equal hashes show it.
	RequestHash string `json:"requestHash,omitempty"`
}

// CellResult is everything measured for one cell.
type CellResult struct {
	Key           string     `json:"key"`
	Model         string     `json:"model"`
	Kind          string     `json:"kind"`
	Configuration string     `json:"configuration"`
	Status        CellStatus `json:"status"`
	Note          string     `json:"note,omitempty"`
	Unstable      bool       `json:"unstable,omitempty"`
	// Attached is set when the runner measured a server it did not start.
	Attached bool `json:"attached,omitempty"`
	// ColdStartMs is spawn to ready; null when not measured (an attached
	// server, or one that never got ready).
	ColdStartMs *float64 `json:"coldStartMs"`
	Samples     []Sample `json:"samples"`
	// LoadPoints are the load phase's points, in the order measured, and
	// MaxRate what its FindMaxRate search found.
	LoadPoints   []LoadPoint `json:"loadPoints,omitempty"`
	MaxRate      *MaxRate    `json:"maxRate,omitempty"`
	PeakRSSBytes int64       `json:"peakRssBytes,omitempty"`
	// Probes are the parity probes' answers (parity.go), asked after the
	// phases; a head-to-head compares its two cells'.
	Probes []Probe `json:"probes,omitempty"`
	// PeakGPUMemoryBytes is null where the gpu probes cannot read it;
	// GPUMemoryNote then says why ("unavailable: no GPU found"). A figure
	// with a note is not the server's own: "device-wide (not the server's
	// own): …" where NVML could not attribute the GPU's memory to the
	// server's processes (a container's PID namespace).
	PeakGPUMemoryBytes *int64   `json:"peakGpuMemoryBytes"`
	GPUMemoryNote      string   `json:"gpuMemoryNote,omitempty"`
	Problems           []string `json:"problems,omitempty"`
	// StderrTail is the end of the server's stderr when a phase failed.
	StderrTail string `json:"stderrTail,omitempty"`
}

// RunRecord is run.json: the plan as run and every sample of every cell.
type RunRecord struct {
	ID         string       `json:"id"`
	Profile    string       `json:"profile"`
	Plan       Plan         `json:"plan"`
	Machine    Machine      `json:"machine"`
	StartedAt  int64        `json:"startedAt"`
	FinishedAt int64        `json:"finishedAt"`
	Cells      []CellResult `json:"cells"`
	Complete   bool         `json:"complete"`
	ExitCode   int          `json:"exitCode"`
	Problems   []string     `json:"problems,omitempty"`
	// Cancelled is set when the run stopped on SIGTERM.
	Cancelled bool `json:"cancelled,omitempty"`
	// Source names the tool that measured an imported run; nil for
	// bench-serve's own.
	Source *Source `json:"source,omitempty"`
}
