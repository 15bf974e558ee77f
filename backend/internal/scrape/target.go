// Package scrape polls the Prometheus endpoints of engines that do not
// publish mlx events (vLLM, SGLang, llama.cpp server) and maps their gauges
// and counters into scheduler.sample and cache.sample events. It also reads
// another mlx-metrics backend's exporter, so one backend can gather several.
package scrape

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/mlx-bun/mlx-metrics/backend/internal/redact"
)

// Kind names an engine's metric dialect.
type Kind string

// The engines whose /metrics this package understands.
const (
	KindAuto     Kind = ""         // decided from the metric prefixes of the first scrape
	KindVLLM     Kind = "vllm"     // vllm:…, labelled model_name
	KindSGLang   Kind = "sglang"   // sglang:…, labelled model_name
	KindLlamaCpp Kind = "llamacpp" // llamacpp:…, unlabelled (one model per server)
	KindMLX      Kind = "mlx"      // mlx_…, another mlx-metrics backend's /api/metrics/prometheus
)

// Target is one endpoint to poll.
type Target struct {
	URL  string
	Kind Kind
	// Model names series that carry no model label (llama.cpp); it defaults
	// to the endpoint's host:port.
	Model string
}

// ParseTarget reads the --scrape flag's form URL[,kind[,model]]. A URL
// without a path gets /metrics.
func ParseTarget(s string) (Target, error) {
	parts := strings.Split(s, ",")
	if len(parts) > 3 {
		return Target{}, fmt.Errorf("scrape target %q: want URL[,kind[,model]]", s)
	}
	u, err := url.Parse(strings.TrimSpace(parts[0]))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Target{}, fmt.Errorf("scrape target %q: want an http(s) URL", s)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/metrics"
	}
	t := Target{URL: u.String(), Model: u.Host}
	if len(parts) > 1 {
		switch k := Kind(strings.TrimSpace(parts[1])); k {
		case KindVLLM, KindSGLang, KindLlamaCpp, KindMLX, KindAuto:
			t.Kind = k
		case "auto":
			t.Kind = KindAuto
		default:
			return Target{}, fmt.Errorf("scrape target %q: kind %q is not one of vllm, sglang, llamacpp, mlx, auto", s, k)
		}
	}
	if len(parts) > 2 {
		if m := strings.TrimSpace(parts[2]); m != "" {
			t.Model = m
		}
	}
	return t, nil
}

// Targets is a flag.Value collecting repeated --scrape flags.
type Targets []Target

// String lists the targets as logs may show them: a URL's password and
// query (which may carry a token) left out (redact.URL).
func (ts *Targets) String() string {
	var s []string
	for _, t := range *ts {
		s = append(s, redact.URL(t.URL))
	}
	return strings.Join(s, " ")
}

// Set parses one --scrape value; several targets may be comma-free repeats
// of the flag.
func (ts *Targets) Set(v string) error {
	t, err := ParseTarget(v)
	if err != nil {
		return err
	}
	*ts = append(*ts, t)
	return nil
}
