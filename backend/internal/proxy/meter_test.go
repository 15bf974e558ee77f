package proxy

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// The model a client names is bounded as the wire validation bounds it,
// and stays valid UTF-8 when cut.
func TestMeterModelName(t *testing.T) {
	long := strings.Repeat("a", events.MaxModelName)
	tests := []struct {
		name, model, want string
	}{
		{"as sent", "qwen3-8b", "qwen3-8b"},
		{"none: unknown", "", "unknown"},
		{"cut to the bound", long + "-extra", long},
		{"cut before a split rune", long[:events.MaxModelName-1] + "é", long[:events.MaxModelName-1]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]string{"model": tc.model})
			m := newMeter(t0, body)
			ev := m.event(outcome{end: t0, status: 200}, "proxy-1")
			got := ev.Payload.(*events.RequestFinished).Model
			if got != tc.want || !utf8.ValidString(got) {
				t.Errorf("model %q, want %q", got, tc.want)
			}
			b, _ := json.Marshal(ev)
			if _, err := events.Parse(b); err != nil {
				t.Errorf("event does not validate: %v", err)
			}
		})
	}
}
