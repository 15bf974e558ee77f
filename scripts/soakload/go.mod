module github.com/mlx-bun/mlx-metrics/scripts/soakload

go 1.26

require (
	github.com/andybalholm/brotli v1.1.0
	github.com/prometheus/procfs v0.22.0
)

require golang.org/x/sys v0.47.0 // indirect
