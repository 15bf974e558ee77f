package ingest

import (
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// Publish holds an event made in the process to the wire's rules and the
// time bounds, and counts it as the other sources count theirs.
func TestSourcePublish(t *testing.T) {
	finished := func(at int64, prompt int64) events.Event {
		return events.Event{Type: events.TypeRequestFinished, At: at, Payload: &events.RequestFinished{
			Model: "m", RequestID: "r", Finish: events.FinishStop, PromptTokens: prompt, TotalMs: 2}}
	}
	tests := []struct {
		name                        string
		ev                          events.Event
		accepted, ignored, rejected uint64
		field                       string // the rejection's
	}{
		{"a measurement", finished(t0, 10), 1, 0, 0, ""},
		{"a request under no model (an upstream refused it)", events.Event{Type: events.TypeRequestFinished, At: t0,
			Payload: &events.RequestFinished{RequestID: "r", Finish: events.FinishError, TotalMs: 2}}, 1, 0, 0, ""},
		{"another type", events.Event{Type: "catalog.changed", At: t0}, 0, 1, 0, ""},
		{"another type, two days old", events.Event{Type: "catalog.changed", At: t0 - 48*time.Hour.Milliseconds()}, 0, 1, 0, ""},
		{"another type, an hour ahead", events.Event{Type: "catalog.changed", At: t0 + time.Hour.Milliseconds()}, 0, 1, 0, ""},
		{"a measurement two days old", finished(t0-48*time.Hour.Milliseconds(), 10), 0, 0, 1, "at"},
		{"a count past its bound", finished(t0, events.MaxTokens+1), 0, 0, 1, "promptTokens"},
		{"stamped an hour ahead", finished(t0+time.Hour.Milliseconds(), 10), 0, 0, 1, "at"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := bus.New()
			var got []events.Event
			defer b.Subscribe("sink", 4, func(ev events.Event) { got = append(got, ev) })()
			src := NewSource("proxy", b, Live, testOptions(t))
			src.Publish(tc.ev)
			b.Flush()
			st := src.Stats()
			if st.Accepted != tc.accepted || st.Ignored != tc.ignored || st.Rejected != tc.rejected ||
				uint64(len(got)) != tc.accepted+tc.ignored {
				t.Errorf("stats %+v with %d published", st, len(got))
			}
			if tc.rejected > 0 && (st.LastRejection == nil || st.LastRejection.Field != tc.field) {
				t.Errorf("last rejection %+v, want one on %s", st.LastRejection, tc.field)
			}
		})
	}
}
