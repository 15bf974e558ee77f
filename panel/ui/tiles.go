package ui

import (
	"fmt"

	"github.com/maxence-charriere/go-app/v10/pkg/app"
)

// tile is one headline figure. key names it for tests and styling.
func tile(key, label, value, hint string) app.UI {
	return app.Div().Class("tile").DataSet("tile", key).Body(
		app.Div().Class("tile-label").Text(label),
		app.Div().Class("tile-value").Text(value),
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
