// Package bench defines bench-serve: plans (what to measure and how to start
// each server), run records (every sample), compact history entries
// (medians), and the jobs that run them.
package bench

import "regexp"

// JobKind is the manifest's job kind: it holds the GPU exclusively and runs
// in its own process (isolation: task).
const JobKind = "bench-serve"

// ProfileNamePattern is what POST /bench accepts as a profile name; it
// resolves to <home>/metrics/bench/plans/<name>.json and nothing else.
var ProfileNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Plan scopes.
const (
	ScopeAll    = "all"    // every model the host serves
	ScopeScoped = "scoped" // only Models
)

// Plan is a bench-serve plan: the servers to start (one per cell) and the
// phases to measure against each. Plans hold commands, so the API only ever
// names them; they are written by `mlx-metrics bench plan` or by hand.
type Plan struct {
	// Scope is all or scoped (the plan's profile scope).
	Scope       string   `json:"scope"`
	Description string   `json:"description,omitempty"`
	Models      []string `json:"models"`
	Cells       []Cell   `json:"cells"`
	Phases      Phases   `json:"phases"`
}

// Cell kinds.
const (
	KindTree      = "tree"      // the server under test
	KindReference = "reference" // a comparison server
)

// Cell is one server configuration to measure.
type Cell struct {
	// Key identifies the cell across runs (model/kind/configuration when empty).
	Key           string `json:"key,omitempty"`
	Model         string `json:"model"`
	Kind          string `json:"kind"`
	Configuration string `json:"configuration"`
	Server        Server `json:"server"`
	// Skip, when set, records the cell as skipped with this note.
	Skip string `json:"skip,omitempty"`
}

// PortPlaceholder is replaced in Argv, Env values and ReadyURL/BaseURL by the
// port chosen for the server.
const PortPlaceholder = "{port}"

// Server says how to start an OpenAI-compatible server and reach it, or,
// with Attach, how to reach one that is already running.
type Server struct {
	// Attach measures a server that is already running at BaseURL: the
	// runner starts and stops nothing, and there is no cold start. Argv,
	// Env and Port are then empty.
	Attach bool              `json:"attach,omitempty"`
	Argv   []string          `json:"argv,omitempty"`
	Env    map[string]string `json:"env,omitempty"`
	// Port is the port to give the server; 0 picks a free loopback port.
	Port int `json:"port,omitempty"`
	// BaseURL is the OpenAI API root, e.g. http://127.0.0.1:{port}/v1.
	BaseURL string `json:"baseUrl"`
	// ReadyURL answers 2xx once the server can take requests. An attached
	// server may leave it empty: the runner then tries {base}/models, then
	// /health at the base URL's host.
	ReadyURL string `json:"readyUrl"`
	// APIModel is the model name sent in requests (Cell.Model when empty).
	APIModel       string `json:"apiModel,omitempty"`
	ReadyTimeoutMs int64  `json:"readyTimeoutMs,omitempty"`
}

// Phases sizes the measurements. Zero values take the defaults below.
type Phases struct {
	DecodeRuns          int     `json:"decodeRuns,omitempty"`          // 5
	DecodeTokens        int     `json:"decodeTokens,omitempty"`        // 192
	UnstableSpread      float64 `json:"unstableSpread,omitempty"`      // 1.15 (max/min)
	ColdPromptTokens    int     `json:"coldPromptTokens,omitempty"`    // ~1024
	ColdRuns            int     `json:"coldRuns,omitempty"`            // 3
	WarmRuns            int     `json:"warmRuns,omitempty"`            // 3
	LongContextTokens   int     `json:"longContextTokens,omitempty"`   // ~16384; -1 skips
	LongDecodeTokens    int     `json:"longDecodeTokens,omitempty"`    // 64
	Concurrency         int     `json:"concurrency,omitempty"`         // 4
	ConcurrentTokens    int     `json:"concurrentTokens,omitempty"`    // 128
	RequestTimeoutScale float64 `json:"requestTimeoutScale,omitempty"` // 1.0
	// Load, when set, adds the load phase after the others (load.go).
	Load *Load `json:"load,omitempty"`
	// LoadOnly skips the single-request phases and the concurrent one.
	LoadOnly bool `json:"loadOnly,omitempty"`
}

// Defaults fills zero fields with the standard phase sizes.
func (p Phases) Defaults() Phases {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&p.DecodeRuns, 5)
	def(&p.DecodeTokens, 192)
	def(&p.ColdPromptTokens, 1024)
	def(&p.ColdRuns, 3)
	def(&p.WarmRuns, 3)
	def(&p.LongContextTokens, 16384)
	def(&p.LongDecodeTokens, 64)
	def(&p.Concurrency, 4)
	def(&p.ConcurrentTokens, 128)
	if p.UnstableSpread == 0 {
		p.UnstableSpread = 1.15
	}
	if p.RequestTimeoutScale == 0 {
		p.RequestTimeoutScale = 1
	}
	if p.Load != nil {
		l := p.Load.Defaults()
		p.Load = &l
	}
	return p
}

// Names is the phases a cell of these phases measures, in order: the
// runner's list and the backend's progress read it alike.
func (p Phases) Names() []string {
	p = p.Defaults()
	if p.LoadOnly {
		return []string{PhaseLoad}
	}
	names := []string{PhaseDecode, PhaseColdTTFT, PhaseWarmTTFT}
	if p.LongContextTokens > 0 {
		names = append(names, PhaseLongContext)
	}
	names = append(names, PhaseConcurrent)
	if p.Load != nil {
		names = append(names, PhaseLoad)
	}
	return names
}

// Profile describes a plan as GET /bench/profiles lists it.
type Profile struct {
	Name string `json:"name"`
	// Path is the plan file on the server, as the original lists it.
	Path        string   `json:"path"`
	Scope       string   `json:"scope"`
	Description string   `json:"description,omitempty"`
	Models      []string `json:"models"`
	Cells       int      `json:"cells"`
	// Error is set when the plan file exists but does not validate.
	Error string `json:"error,omitempty"`
}

// SelfPlaceholder as Server.Argv[0] stands for the runner's own executable,
// so shipped plans start the reference engine (`{self} engine …`) wherever
// the binary lives.
const SelfPlaceholder = "{self}"
