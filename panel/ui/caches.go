package ui

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/charts"
	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// maxGauges bounds the gauges drawn. Each is a chart, redrawn with every
// frame: a host with hundreds of models would spend the frame drawing them
// and leave the panel unresponsive. Past it the fullest caches get gauges
// and a table lists every cache.
const maxGauges = 16

// CachesView shows each model's batch KV cache against its capacity and the
// prefix cache's bytes, capacity and hit rate, as gauges.
type CachesView struct {
	app.Compo

	Snap    *snapshot.Snapshot
	Palette charts.Palette

	rows rowCap // the table's bound
}

func (v *CachesView) Render() app.UI {
	if v.Snap == nil || len(v.Snap.Caches) == 0 {
		return app.Div().Class("view").ID("view-caches").Body(empty("No cache has reported yet."))
	}
	cs := snapshot.Readings(v.Snap.Caches)
	shown := gauged(cs)
	gauges := app.Div().Class("gauges").Body(app.Range(shown).Slice(func(i int) app.UI {
		return v.cache(shown[i], cs[shown[i]])
	}))
	if len(shown) == len(cs) {
		return app.Div().Class("view").ID("view-caches").Body(gauges)
	}
	return app.Div().Class("view").ID("view-caches").Body(
		app.P().Class("note").Text(fmt.Sprintf("Gauges for the %d fullest of %s caches; the table lists every one.", len(shown), format.Count(int64(len(cs))))),
		gauges,
		section("Every cache", cacheTable(cs[:v.rows.shown(len(cs))]), v.rows.more("caches", len(cs), "caches")),
	)
}

// gauged are the indexes in cs of the caches drawn as gauges, in cs's
// order: all of them up to maxGauges, else the maxGauges fullest.
func gauged(cs []snapshot.Reading) []int {
	idx := make([]int, len(cs))
	for i := range idx {
		idx[i] = i
	}
	if len(cs) <= maxGauges {
		return idx
	}
	shares := make([]float64, len(cs)) // once each, not at every comparison
	for i, c := range cs {
		shares[i], _ = fill(c)
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(shares[b], shares[a]) })
	idx = idx[:maxGauges]
	slices.Sort(idx)
	return idx
}

// fill is how full c is, a share in [0,1] (-1 when it reported no
// capacity), and that said in words.
func fill(c snapshot.Reading) (float64, string) {
	switch {
	case c.CapacityBytes != nil && *c.CapacityBytes > 0:
		u := format.UnitOf(c.Bytes, *c.CapacityBytes) // one unit for both
		return float64(c.Bytes) / float64(*c.CapacityBytes),
			fmt.Sprintf("%s of %s", format.BytesIn(c.Bytes, u), format.BytesIn(*c.CapacityBytes, u))
	case c.UsageRatio != nil:
		// Scraped engines (vLLM, SGLang, llama.cpp) report a ratio, not bytes.
		return *c.UsageRatio, format.Percent(*c.UsageRatio) + " in use (reported as a ratio)"
	}
	return -1, format.Bytes(c.Bytes)
}

// cacheTitle names a cache as its card and its table row do.
func cacheTitle(c snapshot.Reading) string {
	if c.Cache == events.CachePrefix {
		return "Prefix cache"
	}
	return "KV cache"
}

// cache is the gauge card of cs[i]; i keeps its chart's id steady.
func (v *CachesView) cache(i int, c snapshot.Reading) app.UI {
	title := cacheTitle(c)
	var gauge app.UI = app.P().Class("gauge-none").Text("no capacity reported")
	share, fillText := fill(c)
	if share >= 0 {
		pal := v.Palette
		gauge = &Chart{
			ID:    fmt.Sprintf("gauge-%s-%d", c.Cache, i),
			Class: "chart chart-gauge",
			Label: title + " fill",
			// Built when drawn: not for a gauge out of view, nor within
			// a second of its last draw.
			Build: func() []byte { return charts.Gauge(title, share*100, pal).JSON() },
			Every: Redraw,
		}
	}
	hit := ""
	if c.Cache == events.CachePrefix {
		hit = "hit rate " + hitRate(c)
		if c.Hits != nil && c.Misses != nil {
			// The host counts lookups in prompt tokens, not in requests.
			hit += fmt.Sprintf(" (%s of %s prompt tokens looked up were cached)", format.Count(*c.Hits), format.Count(*c.Hits+*c.Misses))
		}
	}
	return app.Div().Class("card gauge-card").DataSet("cache", c.Cache).Body(
		app.H3().Body(modelName(c.Model), app.Text(" · "+title)),
		gauge,
		app.P().Class("gauge-fill").Text(fillText),
		app.If(hit != "", func() app.UI { return app.P().Class("gauge-hit").Text(hit) }),
	)
}

// hitRate is a prefix cache's hit rate, a dash when it has none.
func hitRate(c snapshot.Reading) string {
	if c.HitRate == nil {
		return format.Dash
	}
	return format.Percent(*c.HitRate)
}

// cacheTable lists every cache, one row each: what a gauge says, in text.
func cacheTable(cs []snapshot.Reading) app.UI {
	return scrollTable("caches", []string{"Cache", "Fill", "In use", "Hit rate"},
		app.Range(cs).Slice(func(i int) app.UI {
			c := cs[i]
			share, fillText := fill(c)
			use, hit := format.Dash, format.Dash
			if share >= 0 {
				use = format.Percent(share)
			}
			if c.Cache == events.CachePrefix {
				hit = hitRate(c)
			}
			return app.Tr().DataSet("model", c.Model).DataSet("cache", c.Cache).Body(
				app.Td().Body(modelName(c.Model), app.Text(" · "+cacheTitle(c))),
				app.Td().Class("num").Text(fillText),
				app.Td().Class("num").Text(use),
				app.Td().Class("num").Text(hit),
			)
		}))
}
