module github.com/mlx-bun/mlx-metrics/shared

go 1.26
