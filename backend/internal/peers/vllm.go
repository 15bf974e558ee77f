package peers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// vllmResult is one `vllm bench serve --save-result` object
// (vllm/benchmarks/serve.py): times in ms but duration (s), throughputs
// per second. The per-request arrays of --save-detailed are not kept but
// itls, counted for the ITL's count.
type vllmResult struct {
	Date           string     `json:"date"`
	ModelID        string     `json:"model_id"`
	Label          string     `json:"label"`
	BaseURL        string     `json:"base_url"` // not vLLM's; --metadata base_url=… says it
	NumPrompts     num        `json:"num_prompts"`
	RequestRate    num        `json:"request_rate"`
	Burstiness     num        `json:"burstiness"`
	MaxConcurrency num        `json:"max_concurrency"`
	RunNumber      num        `json:"run_number"` // vllm bench sweep's
	Arrival        string     `json:"arrival"`    // metadata of bench export's
	ITLs           innerCount `json:"itls"`
}

// decodeVLLM reads one object, a JSON array of them (`vllm bench sweep`'s
// summary.json) or one a line (--append-result).
func decodeVLLM(b []byte) (result, error) {
	r := result{tool: ToolVLLM}
	var raws []json.RawMessage
	if t := bytes.TrimLeft(b, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '[' {
		if err := json.Unmarshal(t, &raws); err != nil {
			return r, errors.New("a vllm bench serve summary: not a JSON array of objects")
		}
	} else {
		d := json.NewDecoder(bytes.NewReader(b))
		for {
			var m json.RawMessage
			err := d.Decode(&m)
			if err == io.EOF {
				break
			}
			if err != nil {
				r.problem("entry %d and after: not JSON: left out", len(raws)+1)
				break
			}
			raws = append(raws, m)
		}
	}
	for i, raw := range raws {
		if i == maxPoints {
			r.problem("%d entries in the file: the first %d are kept", len(raws), maxPoints)
			break
		}
		r.vllmEntry(fmt.Sprintf("entry %d", i+1), raw)
	}
	return r, nil
}

func (r *result) vllmEntry(what string, raw []byte) {
	var head vllmResult
	var figures map[string]num
	if json.Unmarshal(raw, &head) != nil || json.Unmarshal(raw, &figures) != nil {
		r.problem("%s: not a vllm bench serve result object: left out", what)
		return
	}
	var v vals
	p := bench.LoadPoint{}
	p.Completed = int(v.count("completed", figures["completed"], bench.MaxLoadRequests))
	p.Errors = int(v.count("failed", figures["failed"], bench.MaxLoadRequests))
	p.Requests = p.Completed + p.Errors
	if head.NumPrompts.present {
		p.Requests = int(v.count("num_prompts", head.NumPrompts, bench.MaxLoadRequests))
	}
	p.DurationS = v.f("duration", figures["duration"], 1)
	p.RequestThroughput = v.f("request_throughput", figures["request_throughput"], 1)
	p.OutputThroughput = v.f("output_throughput", figures["output_throughput"], 1)
	p.TotalTokenThroughput = v.f("total_token_throughput", figures["total_token_throughput"], 1)
	p.InputTokens = v.count("total_input_tokens", figures["total_input_tokens"], maxTokens)
	p.OutputTokens = v.count("total_output_tokens", figures["total_output_tokens"], maxTokens)
	p.Goodput = v.opt("request_goodput", figures["request_goodput"], 1)
	switch rate := head.RequestRate; {
	case rate.inf || !rate.present:
		// Every request at once (vLLM's default), or a ramp-up.
	default:
		p.OfferedRate = v.f("request_rate", rate, 1)
		if p.OfferedRate > bench.MaxLoadRate {
			v.bad = append(v.bad, "request_rate is over the load phase's bound")
		}
		p.Arrival = bench.ArrivalPoisson
		if head.Burstiness.present && !head.Burstiness.bad && head.Burstiness.v != 1 {
			p.Arrival = bench.ArrivalGamma
		}
		if head.Arrival == bench.ArrivalConstant || head.Arrival == bench.ArrivalGamma {
			p.Arrival = head.Arrival
		}
	}
	if head.MaxConcurrency.present {
		p.Concurrency = int(v.count("max_concurrency", head.MaxConcurrency, bench.MaxLoadConcurrency))
	}
	if head.RunNumber.present && !head.RunNumber.bad && head.RunNumber.v >= 0 && head.RunNumber.v < bench.MaxLoadRepeats {
		p.Repeat = int(head.RunNumber.v) + 1
	}
	// vLLM's TTFT, TPOT and E2EL are over the completed requests (TPOT
	// leaves out one-token outputs, which the file does not count).
	done := int64(p.Completed)
	p.TTFT = v.dist("ttft", vllmDist(figures, "ttft"), 1, done)
	p.TPOT = v.dist("tpot", vllmDist(figures, "tpot"), 1, done)
	// The gaps are counted from --save-detailed's itls; without them,
	// one gap per output token after each request's first (a chunk a
	// token, as vLLM's own count assumes when it has no tokenizer).
	gaps := head.ITLs.n
	if !head.ITLs.present && p.OutputTokens > done {
		gaps = p.OutputTokens - done
	}
	p.ITL = v.dist("itl", vllmDist(figures, "itl"), 1, gaps)
	p.E2EL = v.dist("e2el", vllmDist(figures, "e2el"), 1, done)
	e := entry{model: clip(head.ModelID, 256), target: clip(head.BaseURL, 256), point: p}
	if t, naive, ok := naiveTime(head.Date); ok {
		// date is when the result was written, after the benchmark.
		r.naive = r.naive || naive
		e.end = t
		e.start = t.Add(-secondsDuration(p.DurationS))
		if !e.start.After(earliest) {
			// A duration reaching back before any result could be: the
			// start is not known (history keeps no run older than 2020).
			e.start = t
			r.problem("a duration of %.0f s reaches back before 2020 from its date: the run is taken to start at its date", p.DurationS)
		}
	} else {
		v.missing = append(v.missing, "date")
	}
	r.keep(what, v, e)
}

// vllmDist is one metric's fields: mean_ttft_ms, median_ttft_ms (or
// p50_ttft_ms), std_ttft_ms, p90_ttft_ms, … p99.9_ttft_ms.
func vllmDist(f map[string]num, metric string) distNums {
	k := func(prefix string) num { return f[prefix+"_"+metric+"_ms"] }
	d := distNums{mean: k("mean"), std: k("std"), median: k("median"),
		p90: k("p90"), p95: k("p95"), p99: k("p99"), p999: k("p99.9")}
	if !d.median.present {
		d.median = k("p50")
	}
	return d
}
