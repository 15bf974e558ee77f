module github.com/mlx-bun/mlx-metrics/panel

go 1.26

require (
	github.com/chromedp/cdproto v0.160.1
	github.com/chromedp/chromedp v0.23.1
	github.com/go-echarts/go-echarts/v2 v2.6.7
	github.com/maxence-charriere/go-app/v10 v10.1.11
	github.com/mlx-bun/mlx-metrics/shared v0.0.0-00010101000000-000000000000
)

require (
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
)

replace github.com/mlx-bun/mlx-metrics/shared => ../shared
