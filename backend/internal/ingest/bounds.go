package ingest

import "github.com/mlx-bun/mlx-metrics/shared/routes"

// BodyPaths is where event batches come in (server.BodyTaker).
func (h *HTTP) BodyPaths() []string { return []string{routes.Events} }
