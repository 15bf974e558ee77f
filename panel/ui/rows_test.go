package ui

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/charts"
	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// manyModels is a snapshot of n resident models, each with a scheduler
// sample and a KV cache reading.
func manyModels(n int) *snapshot.Snapshot {
	s := &snapshot.Snapshot{At: 1_700_000_000_000}
	for i := range n {
		m := fmt.Sprintf("org/model-%04d", i)
		s.Models = append(s.Models, snapshot.Model{Model: m, State: snapshot.StateResident})
		s.Schedulers = append(s.Schedulers, snapshot.Scheduler{SchedulerSample: events.SchedulerSample{Model: m, Active: 1, Capacity: 8}})
		s.Caches = append(s.Caches, snapshot.Cache{Model: m, KV: &snapshot.KVCache{Bytes: int64(i), CapacityBytes: ptr(int64(n))}})
	}
	return s
}

// TestTablesBounded: the tables of models and caches render the first
// MaxRows rows and say how many there are, with a button that shows them
// all and back; a table of MaxRows or fewer has neither.
func TestTablesBounded(t *testing.T) {
	type view struct {
		name string
		make func(s *snapshot.Snapshot) (app.Composer, *rowCap)
		row  *regexp.Regexp // what marks one of its rows
	}
	views := []view{
		{"serving", func(s *snapshot.Snapshot) (app.Composer, *rowCap) {
			v := &ServingView{Snap: s, Palette: charts.Light}
			return v, &v.rows
		}, modelRow},
		{"models", func(s *snapshot.Snapshot) (app.Composer, *rowCap) {
			v := &ModelsView{Snap: s, Palette: charts.Light}
			return v, &v.rows
		}, regexp.MustCompile(`<span class="state state-resident">`)},
		{"caches", func(s *snapshot.Snapshot) (app.Composer, *rowCap) {
			v := &CachesView{Snap: s, Palette: charts.Light}
			return v, &v.rows
		}, modelRow},
	}
	for _, vw := range views {
		for _, n := range []int{MaxRows, MaxRows + 1, 1024} {
			t.Run(fmt.Sprint(vw.name, n), func(t *testing.T) {
				c, _ := vw.make(manyModels(n))
				html := unbroken(render(t, c))
				if got := len(vw.row.FindAllString(html, -1)); got != min(n, MaxRows) {
					t.Errorf("%d rows, want %d", got, min(n, MaxRows))
				}
				if vw.name == "caches" && n <= maxGauges {
					return
				}
				button := `data-action="rows-`
				if n <= MaxRows {
					checkHTML(t, html, []string{"org/model-" + fmt.Sprintf("%04d", n-1)}, []string{button, "table-more"})
					return
				}
				what := map[string]string{"serving": "resident models", "models": "models", "caches": "caches"}[vw.name]
				checkHTML(t, html, []string{fmt.Sprintf("The first %d of %s %s; ", MaxRows, commas(n), what), ">Show all</button>",
					fmt.Sprintf("org/model-%04d", MaxRows-1)}, []string{fmt.Sprintf("org/model-%04d<", MaxRows)})

				c, rows := vw.make(manyModels(n))
				rows.all = true // what the button does
				html = unbroken(render(t, c))
				if got := len(vw.row.FindAllString(html, -1)); got != n {
					t.Errorf("all shown: %d rows, want %d", got, n)
				}
				checkHTML(t, html, []string{fmt.Sprintf("All %s %s; ", commas(n), what), fmt.Sprintf(">Show the first %d</button>", MaxRows),
					fmt.Sprintf("org/model-%04d", n-1)}, nil)
			})
		}
	}
}

// modelRow is a table row of a model (its attributes come in any order).
var modelRow = regexp.MustCompile(`<tr[^>]* data-model="org/model-`)

func commas(n int) string {
	if n >= 1000 {
		return fmt.Sprintf("%d,%03d", n/1000, n%1000)
	}
	return fmt.Sprint(n)
}
