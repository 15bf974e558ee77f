module github.com/mlx-bun/mlx-metrics/scripts/benchstream

go 1.26
