package ui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/panel/charts"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// TestCachesGaugeBound: up to maxGauges caches each get a gauge; past it
// only the fullest do, in their order, and a table lists every cache (the
// first MaxRows until its "Show all" is pressed: TestTablesBounded).
func TestCachesGaugeBound(t *testing.T) {
	snap := func(n int) *snapshot.Snapshot {
		s := &snapshot.Snapshot{}
		for i := range n {
			// Model i's KV cache is i/n full; the last one reports no capacity.
			kv := &snapshot.KVCache{Bytes: int64(i), CapacityBytes: ptr(int64(n))}
			if i == n-1 {
				kv.CapacityBytes = nil
			}
			s.Caches = append(s.Caches, snapshot.Cache{Model: fmt.Sprintf("model-%03d", i), KV: kv})
		}
		return s
	}
	tests := []struct {
		n          int
		gauges     int
		want, not  []string
		tableCount int // rows in the table of every cache
	}{
		{n: maxGauges, gauges: maxGauges - 1, want: []string{`id="gauge-kv-0"`, "no capacity reported"}, not: []string{"fullest", "Every cache"}},
		{n: maxGauges + 1, gauges: maxGauges, tableCount: maxGauges + 1,
			// Model 0 is empty but has a capacity: fuller than model 16, which has none.
			want: []string{"Gauges for the 16 fullest of 17 caches", `id="gauge-kv-15"`, `id="gauge-kv-0"`, "Every cache"},
			not:  []string{"no capacity reported"}},
		{n: 1024, gauges: maxGauges, tableCount: MaxRows,
			want: []string{"Gauges for the 16 fullest of 1,024 caches", `id="gauge-kv-1022"`, `id="gauge-kv-1007"`},
			not:  []string{`id="gauge-kv-1006"`, `id="gauge-kv-1023"`}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.n), func(t *testing.T) {
			html := unbroken(render(t, &CachesView{Snap: snap(tt.n), Palette: charts.Light}))
			if got := strings.Count(html, "chart-gauge"); got != tt.gauges {
				t.Errorf("%d gauges, want %d", got, tt.gauges)
			}
			if got := strings.Count(html, `data-model="model-`); got != tt.tableCount {
				t.Errorf("%d table rows, want %d", got, tt.tableCount)
			}
			checkHTML(t, html, tt.want, tt.not)
		})
	}
}
