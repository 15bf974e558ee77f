module github.com/mlx-bun/mlx-metrics/scripts/soakload

go 1.26
