// Package routes names where the module's HTTP API lives, once for the
// backend that serves it and for the clients (the CLI, the reference
// engine's publisher, the panel) that call it.
package routes

// Prefix is where the manifest's routes are mounted: every route of the
// module is under it.
const Prefix = "/api/metrics"

// Proxy is where the measuring proxy (serve --proxy-to) forwards an
// OpenAI-compatible engine's API, outside Prefix.
const Proxy = "/v1"

// Paths under Prefix that clients name.
const (
	Events = Prefix + "/events" // POST: serving events in
	Stream = Prefix + "/stream" // GET: the snapshot as server-sent events
	Panel  = Prefix + "/panel"  // the panel's frame
)
