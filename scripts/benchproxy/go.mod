module github.com/mlx-bun/mlx-metrics/scripts/benchproxy

go 1.26

require (
	github.com/mlx-bun/mlx-metrics/shared v0.0.0-00010101000000-000000000000
	github.com/prometheus/procfs v0.22.0
)

require golang.org/x/sys v0.47.0 // indirect

replace github.com/mlx-bun/mlx-metrics/shared => ../../shared
