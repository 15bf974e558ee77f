package ui

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/panel/api"
	"github.com/mlx-bun/mlx-metrics/shared/fleet"
)

// The Fleet view: hosts reporting or not, rows by host and model with the
// others summed, the queries; a failed read said as what it is, the last
// figures kept and greyed.
func TestFleetView(t *testing.T) {
	view := fleet.View{Enabled: true, Source: "http://prom.lan:9090", HostLabel: "instance", Range: "15m", At: 1764690000000,
		Hosts: []fleet.Host{{Host: "a:7878", Reporting: true}, {Host: "b:7878", Reporting: false}},
		Rows: []fleet.Row{
			{Host: "a:7878", Model: "qwen", TokensPerSecond: f(612.44), RequestsPerSecond: f(4.8), TTFT: fleet.Quantiles{P50: f(0.09), P95: f(0.31), P99: f(0.52)},
				KVUsage: f(0.41), QueueDepth: f(2), Errors: f(0)},
			{Host: "b:7878", Model: "qwen", TokensPerSecond: f(10)},
		},
		Others:  &fleet.Row{Rows: 3, TokensPerSecond: f(5), E2E: fleet.Quantiles{P50: f(1.25), P95: f(2.5), P99: f(4)}},
		Queries: map[string]string{"tokensPerSecond": "sum by (instance, model_name) (rate(mlx_generation_tokens_total[15m]))"},
	}
	tests := []struct {
		name    string
		reads   []error // nil: the view answered
		want    []string
		notWant []string
	}{
		{"live", []error{nil}, []string{
			"From http://prom.lan:9090, hosts by instance", "not reporting",
			"612.4", "4.80", "90.0 ms / 310 ms / 520 ms", "41.0%", "others (3)", "5.0", "1.25 s / 2.50 s / 4.00 s", "rate(mlx_generation_tokens_total[15m])",
		}, []string{"stale", "Cannot read"}},
		{"the API failing after a good read", []error{nil, &api.Error{Status: 502, Message: "the fleet's query API: unreachable: connection refused"}},
			[]string{`class="view fleet stale"`, "Cannot read the fleet: the fleet&#39;s query API: unreachable: connection refused. The figures below are as of", "612.4"}, nil},
		{"the API failing from the start", []error{errors.New("no answer")}, []string{"Cannot read the fleet: no answer"}, []string{"612.4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &FleetView{rng: "15m"}
			for _, err := range tt.reads {
				v.apply(view, err)
			}
			html := render(t, v)
			// The range asked for is pressed, the others not (attributes
			// come in any order).
			for _, tag := range regexp.MustCompile(`<button[^>]*data-range="[^"]+"[^>]*>`).FindAllString(html, -1) {
				if pressed := !strings.Contains(tag, `aria-pressed="false"`); pressed != strings.Contains(tag, `data-range="15m"`) {
					t.Errorf("range button %s", tag)
				}
			}
			// b:7878 is not reporting, a:7878 is (attributes in any order).
			for _, tag := range regexp.MustCompile(`<(li|tr)[^>]*data-host="[^"]+"[^>]*>`).FindAllString(html, -1) {
				if down := strings.Contains(tag, `data-reporting="false"`); down != strings.Contains(tag, `"b:7878"`) {
					t.Errorf("host element %s", tag)
				}
			}
			checkHTML(t, html, tt.want, tt.notWant)
		})
	}
}
