package ui

import (
	"fmt"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/charts"
	"github.com/mlx-bun/mlx-metrics/panel/format"
	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// CachesView shows each model's batch KV cache against its capacity and the
// prefix cache's bytes, capacity and hit rate, as gauges.
type CachesView struct {
	app.Compo

	Snap    *snapshot.Snapshot
	Palette charts.Palette
}

func (v *CachesView) Render() app.UI {
	if v.Snap == nil || len(v.Snap.Caches) == 0 {
		return app.Div().Class("view").ID("view-caches").Body(empty("No cache has reported yet."))
	}
	cs := snapshot.Readings(v.Snap.Caches)
	return app.Div().Class("view").ID("view-caches").Body(
		app.Div().Class("gauges").Body(app.Range(cs).Slice(func(i int) app.UI {
			return v.cache(i, cs[i])
		})),
	)
}

func (v *CachesView) cache(i int, c snapshot.Reading) app.UI {
	title := "KV cache"
	if c.Cache == events.CachePrefix {
		title = "Prefix cache"
	}
	var gauge app.UI = app.P().Class("gauge-none").Text("no capacity reported")
	fill := format.Bytes(c.Bytes)
	share := -1.0
	switch {
	case c.CapacityBytes != nil && *c.CapacityBytes > 0:
		share = float64(c.Bytes) / float64(*c.CapacityBytes)
		u := format.UnitOf(c.Bytes, *c.CapacityBytes) // one unit for both
		fill = fmt.Sprintf("%s of %s", format.BytesIn(c.Bytes, u), format.BytesIn(*c.CapacityBytes, u))
	case c.UsageRatio != nil:
		// Scraped engines (vLLM, SGLang, llama.cpp) report a ratio, not bytes.
		share = *c.UsageRatio
		fill = format.Percent(share) + " in use (reported as a ratio)"
	}
	if share >= 0 {
		gauge = &Chart{
			ID:     fmt.Sprintf("gauge-%s-%d", c.Cache, i),
			Class:  "chart chart-gauge",
			Label:  title + " fill",
			Option: charts.Gauge(title, share*100, v.Palette),
		}
	}
	hit := ""
	if c.Cache == events.CachePrefix {
		hit = "hit rate " + format.Dash
		if c.HitRate != nil {
			hit = "hit rate " + format.Percent(*c.HitRate)
		}
		if c.Hits != nil && c.Misses != nil {
			// The host counts lookups in prompt tokens, not in requests.
			hit += fmt.Sprintf(" (%s of %s prompt tokens looked up were cached)", format.Count(*c.Hits), format.Count(*c.Hits+*c.Misses))
		}
	}
	return app.Div().Class("card gauge-card").DataSet("cache", c.Cache).Body(
		app.H3().Body(modelName(c.Model), app.Text(" · "+title)),
		gauge,
		app.P().Class("gauge-fill").Text(fill),
		app.If(hit != "", func() app.UI { return app.P().Class("gauge-hit").Text(hit) }),
	)
}
