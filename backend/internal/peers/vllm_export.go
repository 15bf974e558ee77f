package peers

import (
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// ExportCell is one cell's load points, as a run record and a history
// entry both hold them.
type ExportCell struct {
	Model  string
	Points []bench.LoadPoint
}

// WriteVLLM writes the points as a JSON array of `vllm bench serve
// --save-result` objects, one a point: the summary.json that `vllm bench
// sweep serve` writes and `vllm bench sweep plot` reads. finished is the
// run's end (vLLM's date, written in UTC); label names the run.
func WriteVLLM(w io.Writer, cells []ExportCell, finished time.Time, label string) error {
	var out []map[string]any
	for _, c := range cells {
		for _, p := range c.Points {
			out = append(out, vllmObject(c.Model, p, finished, label))
		}
	}
	if len(out) == 0 {
		return errors.New("the run has no load points to export")
	}
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(out)
}

func vllmObject(model string, p bench.LoadPoint, finished time.Time, label string) map[string]any {
	o := map[string]any{
		"date":                   finished.UTC().Format("20060102-150405"),
		"endpoint_type":          "openai",
		"backend":                "openai",
		"label":                  label,
		"model_id":               model,
		"tokenizer_id":           model,
		"num_prompts":            p.Requests,
		"request_rate":           "inf",
		"burstiness":             1.0,
		"max_concurrency":        nil,
		"duration":               p.DurationS,
		"completed":              p.Completed,
		"failed":                 p.Errors,
		"total_input_tokens":     p.InputTokens,
		"total_output_tokens":    p.OutputTokens,
		"request_throughput":     p.RequestThroughput,
		"request_goodput":        nil,
		"output_throughput":      p.OutputThroughput,
		"total_token_throughput": p.TotalTokenThroughput,
		"run_number":             p.Repeat - 1, // vllm bench sweep's
	}
	if p.OfferedRate > 0 {
		o["request_rate"] = p.OfferedRate
	}
	if p.Arrival != "" && p.Arrival != bench.ArrivalPoisson {
		// vLLM has no constant arrivals, and the gamma shape is the plan's,
		// not the point's: the arrival goes as a metadata key (what vLLM's
		// --metadata KEY=VALUE adds), which the import reads back.
		delete(o, "burstiness")
		o["arrival"] = p.Arrival
	}
	if p.Concurrency > 0 {
		o["max_concurrency"] = p.Concurrency
	}
	if p.Goodput != nil {
		o["request_goodput"] = *p.Goodput
	}
	for _, m := range []struct {
		name string
		d    bench.Dist
	}{{"ttft", p.TTFT}, {"tpot", p.TPOT}, {"itl", p.ITL}, {"e2el", p.E2EL}} {
		if m.d.Count == 0 && m.d.Mean == 0 {
			continue
		}
		k := func(prefix string) string { return prefix + "_" + m.name + "_ms" }
		o[k("mean")], o[k("median")], o[k("std")] = m.d.Mean, m.d.Median, m.d.Std
		o[k("p50")], o[k("p90")], o[k("p95")] = m.d.Median, m.d.P90, m.d.P95
		o[k("p99")], o[k("p99.9")] = m.d.P99, m.d.P999
	}
	return o
}
