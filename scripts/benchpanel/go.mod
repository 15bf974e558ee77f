module github.com/mlx-bun/mlx-metrics/scripts/benchpanel

go 1.26

require (
	github.com/chromedp/cdproto v0.160.1
	github.com/chromedp/chromedp v0.23.1
	github.com/mlx-bun/mlx-metrics/shared v0.0.0-00010101000000-000000000000
)

require github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect

replace github.com/mlx-bun/mlx-metrics/shared => ../../shared
