module github.com/mlx-bun/mlx-metrics/scripts/ollamacheck

go 1.26

require github.com/mlx-bun/mlx-metrics/shared v0.0.0-00010101000000-000000000000

replace github.com/mlx-bun/mlx-metrics/shared => ../../shared
