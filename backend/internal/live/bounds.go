package live

import "github.com/mlx-bun/mlx-metrics/shared/routes"

// StreamPaths is the snapshot stream (server.Streamer).
func (l *Live) StreamPaths() []string { return []string{routes.Stream} }
