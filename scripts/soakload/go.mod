module github.com/mlx-bun/mlx-metrics/scripts/soakload

go 1.26

require github.com/andybalholm/brotli v1.1.0
