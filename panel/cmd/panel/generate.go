//go:build !wasm

package main

import (
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"

	"github.com/maxence-charriere/go-app/v10/pkg/app"
)

// workerJS replaces go-app's caching service worker: a live view has nothing
// to offer offline, and a cached wasm would outlive a backend upgrade. ETag
// revalidation keeps repeat loads cheap instead.
const workerJS = `// mlx-metrics panel: no offline cache on purpose (see README).
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (e) => e.waitUntil(self.clients.claim()));
`

// generateMain is the native command: write the frame's static files.
func generateMain() {
	out := flag.String("out", "dist/frame", "directory to write the frame's static files into")
	version := flag.String("version", "dev", "build version (changes the ETag and go-app's update check)")
	wasmSize := flag.Int64("wasm-size", 0, "uncompressed size of app.wasm, for the loading progress (it is served compressed)")
	flag.Parse()
	if err := generate(*out, *version, *wasmSize); err != nil {
		fmt.Fprintln(os.Stderr, "panel:", err)
		os.Exit(1)
	}
}

func generate(out, version string, wasmSize int64) error {
	h := &app.Handler{
		Name:            "mlx-metrics",
		ShortName:       "Metrics",
		Title:           "Metrics",
		Description:     "Live serving metrics and bench-serve history",
		Lang:            "en",
		BackgroundColor: "#ffffff",
		ThemeColor:      "#2f6fdb",
		LoadingLabel:    "Loading panel… {progress}%",
		Icon:            app.Icon{Default: "/web/icon-192.png", Large: "/web/icon-512.png", SVG: "/web/icon.svg"},
		Resources:       app.PrefixedLocation(Prefix),
		// frame.js must run before the wasm: it receives the host's
		// connection and theme and reports the frame's height.
		Scripts:               []string{"/web/frame.js", "/web/echarts.min.js"},
		Styles:                []string{"/web/panel.css"},
		Version:               version,
		ServiceWorkerTemplate: workerJS,
	}
	if wasmSize > 0 {
		h.WasmContentLength = fmt.Sprint(wasmSize)
	}
	if err := app.GenerateStaticWebsite(out, h); err != nil {
		return err
	}
	web := filepath.Join(out, "web")
	if err := os.MkdirAll(web, 0o755); err != nil {
		return err
	}
	for _, size := range []int{192, 512} {
		if err := writeIcon(filepath.Join(web, fmt.Sprintf("icon-%d.png", size)), size); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(web, "icon.svg"), []byte(iconSVG), 0o644)
}

const iconSVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect width="64" height="64" rx="12" fill="#2f6fdb"/><path d="M10 46 L24 30 L34 38 L52 16" stroke="#fff" stroke-width="6" fill="none" stroke-linecap="round" stroke-linejoin="round"/></svg>`

// writeIcon draws the PWA icon: the brand colour with a rising line.
func writeIcon(path string, size int) error {
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	bg := color.RGBA{0x2f, 0x6f, 0xdb, 0xff}
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			img.Set(x, y, bg)
		}
	}
	w := size / 16
	for x := size / 6; x < size*5/6; x++ {
		y := size*5/6 - (x-size/6)*2/3
		for d := -w / 2; d <= w/2; d++ {
			img.Set(x, y+d, color.White)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
