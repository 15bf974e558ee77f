// Package leaktest is goleak for the backend's tests: a package's TestMain
// fails its tests when a goroutine they started outlives them (a stream,
// subscriber, follower or job left running). Fiber's fasthttp keeps two
// goroutines of its own past a server's Shutdown: its worker pool's
// cleaner, which sees the stop at its next 10 s tick, and the process-wide
// Date header clock; they are not the tests' and are ignored.
package leaktest

import (
	"testing"

	"go.uber.org/goleak"
)

// ignored are the library goroutines that outlive a shut-down server.
var ignored = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
	goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
}

// VerifyTestMain runs the package's tests, then fails when a goroutine
// they started is still running.
func VerifyTestMain(m *testing.M) { goleak.VerifyTestMain(m, ignored...) }
