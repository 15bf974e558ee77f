package prom

import (
	"io"
	"testing"

	"github.com/prometheus/common/expfmt"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// BenchmarkObserveRequestFinished is the exporter's cost per finished
// request on the bus (four histograms, five counters).
func BenchmarkObserveRequestFinished(b *testing.B) {
	e := New(Options{})
	q, ttft, dec := 3.0, 85.0, 40.0
	ev := events.Event{Type: events.TypeRequestFinished, At: 1, Payload: &events.RequestFinished{
		Model: "qwen3-8b", RequestID: "r", Finish: events.FinishStop, PromptTokens: 1000, CompletionTokens: 200,
		QueueMs: &q, TTFTMs: &ttft, DecodeTokensPerSecond: &dec, TotalMs: 5060}}
	b.ReportAllocs()
	for b.Loop() {
		e.Observe(ev)
	}
}

// BenchmarkGather is one scrape of 8 models' worth of series, encoded in
// the text format.
func BenchmarkGather(b *testing.B) {
	e := New(Options{})
	q, ttft, dec := 3.0, 85.0, 40.0
	for _, m := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		e.Observe(events.Event{Type: events.TypeSchedulerSample, At: 1, Payload: &events.SchedulerSample{Model: m, Active: 1, Capacity: 8}})
		for _, f := range []events.FinishReason{events.FinishStop, events.FinishLength} {
			e.Observe(events.Event{Type: events.TypeRequestFinished, At: 1, Payload: &events.RequestFinished{
				Model: m, RequestID: "r", Finish: f, QueueMs: &q, TTFTMs: &ttft, DecodeTokensPerSecond: &dec, TotalMs: 5060}})
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		fams, err := e.Registry().Gather()
		if err != nil {
			b.Fatal(err)
		}
		enc := expfmt.NewEncoder(io.Discard, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, f := range fams {
			enc.Encode(f)
		}
	}
}
