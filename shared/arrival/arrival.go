// Package arrival reads when a TCP connection's bytes arrived: on Linux
// a stamped connection asks the kernel for the receive time of each
// read's bytes (SO_TIMESTAMPNS), so a reader that waited for a core after
// its bytes were there can leave that wait out of what it measures. The
// load generator times chunks by it, and scripts/bench-stream frames.
//
// The kernel turns stamps on for every socket a moment after the first
// asks (deferred work, which signals nothing), so a process's first reads
// may come unstamped: they read 0, never an older read's time.
package arrival

// Stamped is a connection that knows when its last read's bytes arrived.
type Stamped interface {
	// LastArrival is the kernel's receive time of the newest bytes the
	// last read returned, in Unix nanoseconds; 0 when it gave none.
	LastArrival() int64
}
