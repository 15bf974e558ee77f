package benchapi

import "github.com/mlx-bun/mlx-metrics/shared/routes"

// BodyPaths is where a run record is imported (server.BodyTaker); a bench
// start's body is a profile name.
func (a *API) BodyPaths() []string { return []string{routes.Prefix + "/history"} }

// StreamPaths are the job routes, which follow jobs and their events as
// server-sent events (server.Streamer).
func (a *API) StreamPaths() []string {
	return []string{routes.Prefix + "/bench", routes.Prefix + "/bench/*"}
}
