package proxy

import "github.com/mlx-bun/mlx-metrics/shared/routes"

// BodyPaths is every relayed route: prompts may be large (server.BodyTaker).
func (p *Proxy) BodyPaths() []string { return []string{routes.Proxy + "/*"} }

// StreamPaths is every relayed route: a completion streams for as long as
// it generates (server.Streamer).
func (p *Proxy) StreamPaths() []string { return []string{routes.Proxy + "/*"} }
