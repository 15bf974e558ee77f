package logging

// The keys of serve's log lines, named once: a host's log pipeline can
// rely on them whatever package wrote the line.
const (
	KeyErr      = "err"      // the failure
	KeyAddr     = "addr"     // a listen address
	KeyHome     = "home"     // the data home
	KeyURL      = "url"      // a URL reached or served
	KeySource   = "source"   // an event source (ingest's name for it)
	KeyModel    = "model"    // a model's name
	KeyJob      = "job"      // a bench-serve job's id
	KeyPath     = "path"     // a file or directory
	KeyCount    = "count"    // how many
	KeyInterval = "interval" // a period
	KeyMethod   = "method"   // an HTTP request's method
	KeyRoute    = "route"    // an HTTP request's path
	KeyPart     = "part"     // which part of serve (history, jobs, engine...)
)
