// Package fleet holds the fleet view's types: GET /api/metrics/fleet's
// answer, which the backend builds (backend/internal/fleet) and the panel
// shows.
package fleet

// Quantiles are the p50, p95 and p99 of a time, in seconds; null where the
// range held no request.
type Quantiles struct {
	P50 *float64 `json:"p50"`
	P95 *float64 `json:"p95"`
	P99 *float64 `json:"p99"`
}

// Row is one host's figures for one model over the range. Others, when
// set, is the row of the rows beyond the top ones together (its host and
// model empty; its times read from their histograms together).
type Row struct {
	Host              string    `json:"host"`
	Model             string    `json:"model"`
	TokensPerSecond   *float64  `json:"tokensPerSecond"`
	RequestsPerSecond *float64  `json:"requestsPerSecond"`
	TTFT              Quantiles `json:"ttftSeconds"`
	TPOT              Quantiles `json:"tpotSeconds"`
	E2E               Quantiles `json:"e2eSeconds"`
	KVUsage           *float64  `json:"kvUsage"`
	QueueDepth        *float64  `json:"queueDepth"`
	Errors            *float64  `json:"errors"`
	// Rows is how many rows Others sums; 0 for a row of its own.
	Rows int `json:"rows,omitempty"`
}

// Host is one host the query API has seen over the range.
type Host struct {
	Host string `json:"host"`
	// Reporting is false for a host seen in the range that the query API
	// scrapes no more (stopped, unreachable): shown as such, not dropped.
	Reporting bool   `json:"reporting"`
	Version   string `json:"version,omitempty"`
}

// View is GET /api/metrics/fleet's answer (docs/api.md, docs/fleet.md).
type View struct {
	Enabled   bool     `json:"enabled"`
	Source    string   `json:"source,omitempty"` // the query API
	HostLabel string   `json:"hostLabel,omitempty"`
	Range     string   `json:"range,omitempty"`
	At        int64    `json:"at,omitempty"` // when it was asked, epoch ms
	Partial   bool     `json:"partial,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
	Hosts     []Host   `json:"hosts"`
	Rows      []Row    `json:"rows"`
	Others    *Row     `json:"others"`
	// Queries are the PromQL each figure came from, by figure.
	Queries map[string]string `json:"queries,omitempty"`
}
