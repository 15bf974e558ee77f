module github.com/mlx-bun/mlx-metrics/scripts/benchproxy

go 1.26
