module github.com/mlx-bun/mlx-metrics/panel

go 1.26

require (
	github.com/chromedp/cdproto v0.160.1 // indirect
	github.com/chromedp/chromedp v0.23.1 // indirect
	github.com/go-echarts/go-echarts/v2 v2.6.7 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/maxence-charriere/go-app/v10 v10.1.11 // indirect
)
