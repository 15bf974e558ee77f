package peers

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// guidellmReport is GuideLLM's benchmarks.json (its GenerativeBenchmarksReport,
// src/guidellm/benchmark/schemas): one benchmark a strategy, each metric a
// distribution over successful, incomplete and errored requests. Times in
// ms where the name says _ms, request latency in seconds, throughputs per
// second, times of day in Unix seconds. The requests each benchmark keeps
// are not read.
type guidellmReport struct {
	Metadata struct {
		Version  string `json:"guidellm_version"`
		Platform string `json:"platform"`
	} `json:"metadata"`
	Config struct {
		Spec struct {
			Backend struct {
				Target string `json:"target"`
				Model  string `json:"model"`
			} `json:"backend"`
		} `json:"spec"`
	} `json:"config"`
	Benchmarks []guidellmEntry `json:"benchmarks"`
}

// guidellmEntry decodes one benchmark, keeping its error rather than
// failing the report: one broken benchmark costs only itself.
type guidellmEntry struct {
	b   guidellmBenchmark
	err error
}

func (e *guidellmEntry) UnmarshalJSON(b []byte) error {
	e.err = json.Unmarshal(b, &e.b)
	return nil
}

type guidellmBenchmark struct {
	Config struct {
		Strategy struct {
			Type           string `json:"type_"`
			Rate           num    `json:"rate"`
			Streams        num    `json:"streams"`
			MaxConcurrency num    `json:"max_concurrency"`
		} `json:"strategy"`
	} `json:"config"`
	// Worker is where GuideLLM before 0.4 named the server.
	Worker struct {
		Target string `json:"backend_target"`
		Model  string `json:"backend_model"`
	} `json:"worker"`
	StartTime num `json:"start_time"`
	EndTime   num `json:"end_time"`
	Duration  num `json:"duration"`
	Metrics   struct {
		Totals struct {
			Successful num `json:"successful"`
			Errored    num `json:"errored"`
			Incomplete num `json:"incomplete"`
			Total      num `json:"total"`
		} `json:"request_totals"`
		RequestsPerSecond     guidellmStatus `json:"requests_per_second"`
		RequestLatency        guidellmStatus `json:"request_latency"`
		PromptTokenCount      guidellmStatus `json:"prompt_token_count"`
		OutputTokenCount      guidellmStatus `json:"output_token_count"`
		TimeToFirstTokenMs    guidellmStatus `json:"time_to_first_token_ms"`
		InterTokenLatencyMs   guidellmStatus `json:"inter_token_latency_ms"`
		OutputTokensPerSecond guidellmStatus `json:"output_tokens_per_second"`
		TokensPerSecond       guidellmStatus `json:"tokens_per_second"`
	} `json:"metrics"`
}

// guidellmStatus is a StatusDistributionSummary; only the successful
// requests' are read, as vLLM's figures are over the completed.
type guidellmStatus struct {
	Successful guidellmDist `json:"successful"`
}

type guidellmDist struct {
	Mean        num `json:"mean"`
	Median      num `json:"median"`
	Std         num `json:"std_dev"`
	Count       num `json:"count"`
	Sum         num `json:"total_sum"`
	Percentiles struct {
		P90  num `json:"p90"`
		P95  num `json:"p95"`
		P99  num `json:"p99"`
		P999 num `json:"p999"`
	} `json:"percentiles"`
}

func (d guidellmDist) nums() distNums {
	return distNums{mean: d.Mean, std: d.Std, median: d.Median, count: d.Count,
		p90: d.Percentiles.P90, p95: d.Percentiles.P95, p99: d.Percentiles.P99, p999: d.Percentiles.P999}
}

func decodeGuideLLM(b []byte) (result, error) {
	r := result{tool: ToolGuideLLM}
	var rep guidellmReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return r, errors.New("a GuideLLM report: its metadata, config or benchmarks[] do not read")
	}
	r.version = clip(rep.Metadata.Version, 64)
	r.machine.OS = clip(rep.Metadata.Platform, 256)
	for i, e := range rep.Benchmarks {
		what := fmt.Sprintf("benchmarks[%d]", i)
		if i == maxPoints {
			r.problem("%d benchmarks in the file: the first %d are kept", len(rep.Benchmarks), maxPoints)
			break
		}
		if e.err != nil {
			r.problem("%s: not a GuideLLM benchmark: left out", what)
			continue
		}
		model, target := rep.Config.Spec.Backend.Model, rep.Config.Spec.Backend.Target
		if model == "" && target == "" {
			model, target = e.b.Worker.Model, e.b.Worker.Target
		}
		r.guidellmEntry(what, e.b, clip(model, 256), clip(target, 256))
	}
	return r, nil
}

func (r *result) guidellmEntry(what string, b guidellmBenchmark, model, target string) {
	var v vals
	m := b.Metrics
	p := bench.LoadPoint{}
	p.Completed = int(v.count("request_totals.successful", m.Totals.Successful, bench.MaxLoadRequests))
	// Incomplete requests were cut at the benchmark's end: sent, not completed.
	p.Errors = int(v.count("request_totals.errored", m.Totals.Errored, bench.MaxLoadRequests)) +
		int(v.count("request_totals.incomplete", m.Totals.Incomplete, bench.MaxLoadRequests))
	p.Requests = int(v.count("request_totals.total", m.Totals.Total, bench.MaxLoadRequests))
	p.DurationS = v.f("duration", b.Duration, 1)
	p.RequestThroughput = v.f("requests_per_second", m.RequestsPerSecond.Successful.Mean, 1)
	p.OutputThroughput = v.f("output_tokens_per_second", m.OutputTokensPerSecond.Successful.Mean, 1)
	p.TotalTokenThroughput = v.f("tokens_per_second", m.TokensPerSecond.Successful.Mean, 1)
	p.InputTokens = v.count("prompt_token_count", m.PromptTokenCount.Successful.Sum, maxTokens)
	p.OutputTokens = v.count("output_token_count", m.OutputTokenCount.Successful.Sum, maxTokens)
	p.TTFT = v.dist("time_to_first_token_ms", m.TimeToFirstTokenMs.Successful.nums(), 1, 0)
	// GuideLLM's inter_token_latency is vLLM's TPOT, (last − first token) /
	// (output tokens − 1) a request; GuideLLM weighs each by its gaps.
	p.TPOT = v.dist("inter_token_latency_ms", m.InterTokenLatencyMs.Successful.nums(), 1, 0)
	v.missing = append(v.missing, "itl (gap by gap)")
	p.E2EL = v.dist("request_latency", m.RequestLatency.Successful.nums(), 1000, 0)
	s := b.Config.Strategy
	switch s.Type {
	case "constant", "poisson", "async":
		p.OfferedRate = v.f("strategy.rate", s.Rate, 1)
		if p.OfferedRate > bench.MaxLoadRate {
			v.bad = append(v.bad, "strategy.rate is over the load phase's bound")
		}
		p.Arrival = bench.ArrivalConstant
		if s.Type == "poisson" {
			p.Arrival = bench.ArrivalPoisson
		}
	case "concurrent":
		p.Concurrency = int(v.count("strategy.streams", s.Streams, bench.MaxLoadConcurrency))
	case "synchronous":
		p.Concurrency = 1
	case "throughput":
		if s.MaxConcurrency.present {
			p.Concurrency = int(v.count("strategy.max_concurrency", s.MaxConcurrency, bench.MaxLoadConcurrency))
		}
	default:
		v.missing = append(v.missing, "strategy")
	}
	e := entry{model: model, target: target, point: p}
	start, okStart := unixTime(b.StartTime)
	end, okEnd := unixTime(b.EndTime)
	if okStart && okEnd && !end.Before(start) {
		e.start, e.end = start, end
	} else {
		v.missing = append(v.missing, "start_time")
	}
	r.keep(what, v, e)
}
