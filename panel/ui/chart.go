package ui

import (
	"bytes"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/echarts"
)

// Chart is an element ECharts draws an option into. The option is built in
// Go (package charts); the element only hosts the canvas.
//
// A chart is drawn when it mounts; after that it is redrawn only while it
// is in view (echarts.InView) and only when its option
// changed. One out of view keeps what it drew and is brought up to date
// when it comes into view: a stream frame comes twice a second, and
// handing ECharts every chart's option with each was most of the panel's
// time per frame (docs/performance.md#the-panels-cost-per-frame).
type Chart struct {
	app.Compo

	ID string
	// Option is the option, or Build builds it: only when the chart is
	// drawn, not for a chart out of view.
	Option []byte
	Build  func() []byte
	// Class sizes the chart (chart, chart-small, chart-gauge).
	Class string
	// Label names the chart for assistive technology.
	Label string
	// Every, when set, is the shortest time between two redraws: an
	// option that changes sooner is drawn once Every has passed since the
	// last draw, as it is then (what the latest frame made), not at each
	// frame. The Serving view's charts, of 1 s and 5 s points, and the
	// Caches view's gauges are redrawn once a second (Redraw) rather than
	// with each of the stream's two frames a second: under the profiler,
	// handing ECharts the options was the largest part of those views'
	// frame (unprofiled the Serving view gained some 5 % at 16 models;
	// docs/performance.md#the-panels-cost-per-frame).
	Every time.Duration

	drawn   echarts.Chart // the chart this element holds, disposed by this component only
	drawnID string        // the ID it was drawn under
	last    []byte        // the option it was last handed
	drawnAt time.Time     // when it was last handed one
	due     bool          // a redraw waits for Every to pass
	stop    func()        // ends the watch of its element (echarts.Observe)
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

func (c *Chart) OnDismount() {
	c.unwatch()
	c.drawn.Dispose()
}

func (c *Chart) unwatch() {
	if c.stop != nil {
		c.stop()
		c.stop = nil
	}
}

func (c *Chart) option() []byte {
	if c.Build != nil {
		return c.Build()
	}
	return c.Option
}

// draw hands the option to ECharts; when the library is not there yet (the
// frame still loading it) it tries again shortly, in the browser only.
func (c *Chart) draw(ctx app.Context) {
	if c.Option == nil && c.Build == nil {
		return
	}
	if c.drawnID != c.ID {
		// A reused element took another ID (the gauges shown changed):
		// start over. Only this element's own chart is disposed: another
		// element may hold the old ID's chart by now.
		c.unwatch()
		c.drawn.Dispose()
		c.drawn, c.drawnID, c.last = echarts.Chart{}, "", nil
	} else if !echarts.InView(c.ID) {
		return // drawn; brought up to date when it comes into view
	} else if wait := c.Every - time.Since(c.drawnAt); wait > 0 {
		// Drawn less than Every ago: draw what is current once it has
		// passed (one redraw waits at a time).
		if !c.due {
			c.due = true
			ctx.After(wait, func(ctx app.Context) {
				// Only the chart is redrawn: Dispatch (under After) would
				// render its view and the panel again too.
				ctx.PreventUpdate()
				c.due = false
				c.draw(ctx)
			})
		}
		return
	}
	option := c.option()
	if len(option) == 0 || c.drawnID == c.ID && bytes.Equal(option, c.last) {
		return
	}
	if ch, ok := echarts.Set(c.ID, option); ok {
		c.drawn, c.drawnID, c.last, c.drawnAt = ch, c.ID, option, time.Now()
		if c.stop == nil {
			c.stop = echarts.Observe(c.ID, func() { ctx.Dispatch(c.draw) })
		}
	} else if app.IsClient {
		ctx.After(200*time.Millisecond, c.draw)
	}
}
