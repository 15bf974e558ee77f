package otlp

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// The Prometheus bridge gives every instrument the Prometheus name and no
// unit. semantic renames the instruments the OpenTelemetry GenAI semantic
// conventions name (gen_ai.server.time_to_first_token, …) and gives each
// instrument its UCUM unit, so a collector and its backends read seconds,
// bytes and tokens as such.

// genAI is an instrument of the GenAI conventions and the Prometheus
// family it comes from.
type genAI struct {
	name string
	// tokenType, when set, makes the family one half of
	// gen_ai.client.token.usage, told apart by gen_ai.token.type.
	tokenType string
}

var genAIFamilies = map[string]genAI{
	"mlx_time_to_first_token_seconds":   {name: "gen_ai.server.time_to_first_token"},
	"mlx_time_per_output_token_seconds": {name: "gen_ai.server.time_per_output_token"},
	"mlx_e2e_request_latency_seconds":   {name: "gen_ai.server.request.duration"},
	"mlx_request_prompt_tokens":         {name: "gen_ai.client.token.usage", tokenType: "input"},
	"mlx_request_generation_tokens":     {name: "gen_ai.client.token.usage", tokenType: "output"},
}

// GenAI attributes every GenAI instrument carries. The events name no
// operation (chat or text completion), so the conventions' generic one; the
// provider is the serving host's.
const (
	genAIOperation = "generate_content"
	genAIProvider  = "mlx"
)

// units are the UCUM units of the mlx_ families, by name; a family the
// table does not know gets its unit from its name's suffix (unitOf).
var units = map[string]string{
	"mlx_num_requests_running":         "{request}",
	"mlx_num_requests_waiting":         "{request}",
	"mlx_num_requests_capacity":        "{request}",
	"mlx_generation_tokens_per_second": "{token}/s",
	"mlx_kv_cache_usage_ratio":         "1",
	"mlx_prefix_cache_hits_total":      "{token}",
	"mlx_prefix_cache_queries_total":   "{token}",
	"mlx_request_success_total":        "{request}",
	"mlx_request_errors_total":         "{request}",
	"mlx_model_loads_total":            "{load}",
	"mlx_model_unloads_total":          "{unload}",
	"mlx_model_resident":               "1",
	"mlx_build_info":                   "1",
	"mlx_request_prompt_tokens":        "{token}",
	"mlx_request_generation_tokens":    "{token}",
}

// unitOf is name's UCUM unit: from the table, else by its suffix.
func unitOf(name string) string {
	if u, ok := units[name]; ok {
		return u
	}
	switch {
	case strings.HasSuffix(name, "_seconds"):
		return "s"
	case strings.HasSuffix(name, "_bytes"):
		return "By"
	case strings.HasSuffix(name, "_tokens_total"), strings.HasSuffix(name, "_tokens_cached_total"):
		return "{token}"
	}
	return ""
}

// semantic wraps the bridge's producer.
type semantic struct{ sdkmetric.Producer }

func (p semantic) Produce(ctx context.Context) ([]metricdata.ScopeMetrics, error) {
	sms, err := p.Producer.Produce(ctx)
	for i := range sms {
		sms[i].Metrics = describe(sms[i].Metrics)
	}
	return sms, err
}

// describe gives each metric its unit, renames the GenAI ones with their
// attributes, and joins the two token histograms into one.
func describe(ms []metricdata.Metrics) []metricdata.Metrics {
	out := ms[:0]
	usage := -1 // index in out of gen_ai.client.token.usage
	for _, m := range ms {
		m.Unit = unitOf(m.Name)
		g, ok := genAIFamilies[m.Name]
		if !ok {
			out = append(out, m)
			continue
		}
		m.Name = g.name
		h, isHist := m.Data.(metricdata.Histogram[float64])
		if !isHist {
			out = append(out, m)
			continue
		}
		for j := range h.DataPoints {
			h.DataPoints[j].Attributes = genAIAttributes(h.DataPoints[j].Attributes, g.tokenType)
		}
		m.Data = h
		if g.tokenType == "" {
			out = append(out, m)
			continue
		}
		m.Description = "Number of input and output tokens used."
		if usage < 0 {
			usage = len(out)
			out = append(out, m)
			continue
		}
		joined := out[usage].Data.(metricdata.Histogram[float64])
		joined.DataPoints = append(joined.DataPoints, h.DataPoints...)
		out[usage].Data = joined
	}
	return out
}

// genAIAttributes are a GenAI instrument's attributes: model_name as
// gen_ai.request.model, the operation and provider, and the token type
// when set.
func genAIAttributes(set attribute.Set, tokenType string) attribute.Set {
	kvs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", genAIOperation),
		attribute.String("gen_ai.provider.name", genAIProvider),
	}
	if tokenType != "" {
		kvs = append(kvs, attribute.String("gen_ai.token.type", tokenType))
	}
	for it := set.Iter(); it.Next(); {
		kv := it.Attribute()
		if kv.Key == "model_name" {
			kv.Key = "gen_ai.request.model"
		}
		kvs = append(kvs, kv)
	}
	return attribute.NewSet(kvs...)
}
