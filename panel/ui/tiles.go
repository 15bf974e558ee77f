package ui

import (
	"fmt"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/format"
)

// tile is one headline figure. key names it for tests and styling.
func tile(key, label, value, hint string) app.UI { return tileOf("tile", key, label, value, hint) }

// wideTile is a tile two columns wide, to fill the grid's last row.
func wideTile(key, label, value, hint string) app.UI {
	return tileOf("tile tile-wide", key, label, value, hint)
}

func tileOf(class, key, label, value, hint string) app.UI {
	return app.Div().Class(class).DataSet("tile", key).Body(
		app.Div().Class("tile-label").Text(label),
		app.Div().Class("tile-value").Text(value),
		app.If(hint != "", func() app.UI { return app.Div().Class("tile-hint").Text(hint) }),
	)
}

// multiTile is a tile of several figures of one quantity (p50 · p95 ·
// p99): smaller, each figure kept whole when the tile wraps.
func multiTile(key, label string, values []string, hint string) app.UI {
	parts := make([]app.UI, 0, 2*len(values))
	for i, v := range values {
		if i > 0 {
			parts = append(parts, app.Text(" · "))
		}
		parts = append(parts, app.Span().Class("figure").Text(v))
	}
	return app.Div().Class("tile tile-multi").DataSet("tile", key).Body(
		app.Div().Class("tile-label").Text(label),
		app.Div().Class("tile-value").Body(parts...),
		app.If(hint != "", func() app.UI { return app.Div().Class("tile-hint").Text(hint) }),
	)
}

// empty is the placeholder of a view with nothing to show yet.
func empty(msg string) app.UI {
	return app.P().Class("empty").Text(msg)
}

func section(title string, body ...app.UI) app.UI {
	return app.Section().Class("card").Body(
		app.H2().Text(title),
		app.Div().Class("card-body").Body(body...),
	)
}

func itoa(n int) string { return fmt.Sprint(n) }

// unbrokenWord is the length (in bytes) past which a word of a model id,
// between its separators, may break anywhere: about what a phone's table
// column shows on one line.
const unbrokenWord = 20

// modelName renders a model id with break opportunities after its
// separators (org/name-variant.quant), so a narrow column wraps it there
// rather than inside a word. A name with a word longer than unbrokenWord
// is also marked model-name-unbroken, which may break inside that word
// (overflow-wrap: anywhere): left whole, it would set its column's width.
func modelName(name string) app.UI {
	var parts []app.UI
	start, word, longest := 0, 0, 0 // word: where the current word began
	for i := 0; i < len(name); i++ {
		switch name[i] {
		case '/', '-', '_', '.', ':', '@':
			parts = append(parts, app.Text(name[start:i+1]), app.Wbr())
			start = i + 1
		case ' ': // a break opportunity already (names joined by ", ")
		default:
			longest = max(longest, i+1-word)
			continue
		}
		word = i + 1
	}
	if start < len(name) {
		parts = append(parts, app.Text(name[start:]))
	}
	class := "model-name"
	if longest > unbrokenWord {
		class += " model-name-unbroken"
	}
	return app.Span().Class(class).Body(parts...)
}

// scrollTable is a table that scrolls sideways inside its card on a narrow
// screen (with a shadow at the edge as the cue); the first column is text,
// the others numbers, right-aligned under right-aligned headers.
func scrollTable(class string, headers []string, rows app.UI) app.UI {
	return app.Div().Class("table-wrap").Body(app.Table().Class("table "+class).Body(
		app.THead().Body(app.Tr().Body(app.Range(headers).Slice(func(i int) app.UI {
			if i == 0 {
				return th(headers[i])
			}
			return thNum(headers[i])
		}))),
		app.TBody().Body(rows),
	))
}

// MaxRows bounds the rows a table of models or caches renders while it
// follows the stream, until its "Show all" is pressed: each row is some
// ten elements that go-app rebuilds and compares, and the browser lays
// out, with every frame, twice a second. A table of 1,024 models took
// most of the frame (docs/performance.md#the-panels-cost-per-frame).
const MaxRows = 50

// rowCap is the bound of one table: the rows it shows of n, and the line
// under it that says how many it leaves out, with the button that shows
// them all (and the first MaxRows again). Its zero value shows the first
// MaxRows; a view keeps it across frames (unexported, it is the mounted
// component's own), and a new view starts bounded again.
type rowCap struct{ all bool }

// shown is how many of n rows the table renders.
func (c *rowCap) shown(n int) int {
	if c.all {
		return n
	}
	return min(n, MaxRows)
}

// more is the line under a table of n rows (what they are, plural), nil
// when it has MaxRows or fewer. key names the table for tests
// (data-rows).
func (c *rowCap) more(key string, n int, what string) app.UI {
	if n <= MaxRows {
		return nil
	}
	text, label := fmt.Sprintf("The first %d of %s %s; ", MaxRows, format.Count(int64(n)), what), "Show all"
	if c.all {
		text, label = fmt.Sprintf("All %s %s; ", format.Count(int64(n)), what), fmt.Sprintf("Show the first %d", MaxRows)
	}
	return app.P().Class("note table-more").DataSet("rows", key).Body(
		app.Text(text),
		app.Button().Class("btn").DataSet("action", "rows-"+key).Text(label).
			OnClick(func(ctx app.Context, e app.Event) { c.all = !c.all }),
	)
}
