// Package logkey names, once, the attribute keys of serve's log lines
// (log/slog), for the backend's packages and the gpu module's engine alike:
// a host's log pipeline can rely on them whatever package wrote the line.
package logkey

const (
	Err      = "err"      // the failure
	Addr     = "addr"     // a listen address
	Home     = "home"     // the data home
	URL      = "url"      // a URL reached or served
	Source   = "source"   // an event source (ingest's name for it)
	Model    = "model"    // a model's name
	Job      = "job"      // a bench-serve job's id
	Path     = "path"     // a file or directory
	Interval = "interval" // a period
	Method   = "method"   // an HTTP request's method
	Route    = "route"    // an HTTP request's path
)
