package peers

import (
	"encoding/json"
	"errors"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// aiperfExport is AIPerf's profile_export_aiperf.json (its JsonExportData,
// aiperf/exporters/metrics_json_exporter.py): one run at one rate or
// concurrency, each metric a record with its own unit. Its times of day
// are Python's datetime.fromtimestamp, local and without a zone.
type aiperfExport struct {
	Version     string `json:"aiperf_version"`
	StartTime   string `json:"start_time"`
	EndTime     string `json:"end_time"`
	Cancelled   bool   `json:"was_cancelled"`
	InputConfig struct {
		Models struct {
			Items []struct {
				Name string `json:"name"`
			} `json:"items"`
		} `json:"models"`
		Endpoint struct {
			URLs       []string `json:"urls"`
			URL        string   `json:"url"`         // before 0.10
			ModelNames []string `json:"model_names"` // before 0.10
		} `json:"endpoint"`
		Phases []struct {
			Kind        string `json:"kind"`
			Type        string `json:"type"`
			Rate        num    `json:"rate"`
			Concurrency num    `json:"concurrency"`
		} `json:"phases"`
		Loadgen struct { // before 0.10
			RequestRate num `json:"request_rate"`
			Concurrency num `json:"concurrency"`
		} `json:"loadgen"`
	} `json:"input_config"`
}

// aiperfMetric is one metric record.
type aiperfMetric struct {
	Unit  string `json:"unit"`
	Avg   num    `json:"avg"`
	Std   num    `json:"std"`
	P50   num    `json:"p50"`
	P90   num    `json:"p90"`
	P95   num    `json:"p95"`
	P99   num    `json:"p99"`
	P999  num    `json:"p99_9"`
	Count num    `json:"count"`
	bad   bool
}

func (m *aiperfMetric) UnmarshalJSON(b []byte) error {
	type plain aiperfMetric
	if b[0] != '{' || json.Unmarshal(b, (*plain)(m)) != nil {
		*m = aiperfMetric{bad: true}
	}
	return nil
}

func decodeAIPerf(b []byte) (result, error) {
	r := result{tool: ToolAIPerf}
	var x aiperfExport
	var metrics map[string]aiperfMetric
	if json.Unmarshal(b, &x) != nil || json.Unmarshal(b, &metrics) != nil {
		return r, errors.New("an AIPerf export: its aiperf_version, times or input_config do not read")
	}
	r.version = clip(x.Version, 64)
	ic := x.InputConfig
	var model, target string
	switch {
	case len(ic.Models.Items) > 0:
		model = ic.Models.Items[0].Name
	case len(ic.Endpoint.ModelNames) > 0:
		model = ic.Endpoint.ModelNames[0]
	}
	target = ic.Endpoint.URL
	if len(ic.Endpoint.URLs) > 0 {
		target = ic.Endpoint.URLs[0]
	}
	if x.Cancelled {
		r.problem("AIPerf says the run was cancelled")
	}
	var v vals
	get := func(name string) aiperfMetric {
		m, ok := metrics[name]
		if ok && m.bad {
			v.bad = append(v.bad, name+" is not a metric record")
		}
		return m
	}
	// scalar is a per-run figure in its unit, scaled to ours.
	scalar := func(name string, units map[string]float64) float64 {
		m := get(name)
		scale, ok := units[m.Unit]
		if m.Avg.present && !ok {
			v.bad = append(v.bad, name+": unit "+clip(m.Unit, 20)+" is not one this reads")
		}
		return v.f(name, m.Avg, scale)
	}
	count := func(name string, limit float64) int64 {
		return v.count(name, get(name).Avg, limit)
	}
	dist := func(name string) bench.Dist {
		m := get(name)
		scale, ok := msPer[m.Unit]
		if m.Avg.present && !ok {
			v.bad = append(v.bad, name+": unit "+clip(m.Unit, 20)+" is not a time")
		}
		return v.dist(name, distNums{mean: m.Avg, std: m.Std, median: m.P50, p90: m.P90, p95: m.P95,
			p99: m.P99, p999: m.P999, count: m.Count}, scale, 0)
	}
	p := bench.LoadPoint{}
	p.Completed = int(count("request_count", bench.MaxLoadRequests))
	if _, ok := metrics["error_request_count"]; ok {
		p.Errors = int(count("error_request_count", bench.MaxLoadRequests))
	}
	p.Requests = p.Completed + p.Errors
	p.DurationS = scalar("benchmark_duration", map[string]float64{"sec": 1, "s": 1, "ms": 1e-3})
	perSecond := map[string]float64{"requests/sec": 1, "tokens/sec": 1}
	p.RequestThroughput = scalar("request_throughput", perSecond)
	p.OutputThroughput = scalar("output_token_throughput", perSecond)
	p.TotalTokenThroughput = scalar("total_token_throughput", perSecond)
	p.InputTokens = count("total_isl", maxTokens)
	p.OutputTokens = count("total_osl", maxTokens)
	if _, ok := metrics["goodput"]; ok {
		g := scalar("goodput", perSecond)
		p.Goodput = &g
	}
	p.TTFT = dist("time_to_first_token")
	// AIPerf's inter_token_latency is vLLM's TPOT, one a request; its
	// inter_chunk_latency is vLLM's ITL, every gap between chunks.
	p.TPOT = dist("inter_token_latency")
	p.ITL = dist("inter_chunk_latency")
	p.E2EL = dist("request_latency")
	for _, ph := range ic.Phases {
		if ph.Kind != "profiling" {
			continue
		}
		if ph.Rate.present {
			p.OfferedRate = v.f("phases.rate", ph.Rate, 1)
			p.Arrival = bench.ArrivalPoisson
			if ph.Type == "constant" {
				p.Arrival = bench.ArrivalConstant
			}
		}
		if ph.Concurrency.present {
			p.Concurrency = int(v.count("phases.concurrency", ph.Concurrency, bench.MaxLoadConcurrency))
		}
	}
	if len(ic.Phases) == 0 {
		if ic.Loadgen.RequestRate.present {
			p.OfferedRate = v.f("loadgen.request_rate", ic.Loadgen.RequestRate, 1)
			p.Arrival = bench.ArrivalPoisson
		}
		if ic.Loadgen.Concurrency.present {
			p.Concurrency = int(v.count("loadgen.concurrency", ic.Loadgen.Concurrency, bench.MaxLoadConcurrency))
		}
	}
	if p.OfferedRate > bench.MaxLoadRate {
		v.bad = append(v.bad, "the request rate is over the load phase's bound")
	}
	e := entry{model: clip(model, 256), target: clip(target, 256), point: p}
	start, naiveStart, okStart := naiveTime(x.StartTime)
	end, naiveEnd, okEnd := naiveTime(x.EndTime)
	if okStart && okEnd && !end.Before(start) {
		e.start, e.end = start, end
		r.naive = naiveStart || naiveEnd
	} else {
		v.missing = append(v.missing, "start_time")
	}
	r.keep("the export", v, e)
	return r, nil
}

// msPer is milliseconds per unit of AIPerf's time units.
var msPer = map[string]float64{"ms": 1, "sec": 1000, "s": 1000, "us": 1e-3, "ns": 1e-6}
