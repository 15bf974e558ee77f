// Command panel is the <mlx-metrics-panel> frame. Built for js/wasm it is
// the panel itself (app.wasm); run natively it writes the go-app page and
// its static files for the frame, which scripts/build-panel then packs next
// to the wasm for the backend to embed.
package main

import (
	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/mlx-bun/mlx-metrics/panel/ui"
	"github.com/mlx-bun/mlx-metrics/shared/routes"
)

// Prefix is where the backend serves the frame (webui.FramePath).
const Prefix = routes.Panel

func main() {
	app.Route("/", func() app.Composer { return ui.NewPanel(ui.DefaultConnection, "") })
	// In the browser this runs the app and never returns.
	app.RunWhenOnBrowser()
	generateMain()
}
