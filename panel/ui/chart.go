package ui

import (
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/echarts"
)

// Chart is an element ECharts draws Option into. The option is built in Go
// (package charts); the element only hosts the canvas.
type Chart struct {
	app.Compo

	ID     string
	Option []byte
	// Class sizes the chart (chart, chart-small, chart-gauge).
	Class string
	// Label names the chart for assistive technology.
	Label string

	drawn   echarts.Chart // the chart this element holds, disposed by this component only
	drawnID string        // the ID it was drawn under
}

func (c *Chart) Render() app.UI {
	class := c.Class
	if class == "" {
		class = "chart"
	}
	return app.Div().ID(c.ID).Class(class).Aria("label", c.Label).Attr("role", "img").DataSet("chart", c.ID)
}

func (c *Chart) OnMount(ctx app.Context) { ctx.Defer(c.draw) }

func (c *Chart) OnUpdate(ctx app.Context) { ctx.Defer(c.draw) }

func (c *Chart) OnDismount() { c.drawn.Dispose() }

// draw hands the option to ECharts; when the library is not there yet (the
// frame still loading it) it tries again shortly, in the browser only.
func (c *Chart) draw(ctx app.Context) {
	if len(c.Option) == 0 {
		return
	}
	if c.drawnID != c.ID {
		// A reused element took another ID (the gauges shown changed):
		// start over. Only this element's own chart is disposed: another
		// element may hold the old ID's chart by now.
		c.drawn.Dispose()
		c.drawn, c.drawnID = echarts.Chart{}, ""
	}
	if ch, ok := echarts.Set(c.ID, c.Option); ok {
		c.drawn, c.drawnID = ch, c.ID
	} else if app.IsClient {
		ctx.After(200*time.Millisecond, c.draw)
	}
}
