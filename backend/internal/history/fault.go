package history

import (
	"errors"
	"runtime/debug"
)

// ErrFault is Badger faulting as it read one of its memory-mapped files:
// a page a full disk cannot back, or a file cut short under it.
var ErrFault = errors.New("history files could not be read from memory (is the disk full?)")

// guardFault runs f, turning a memory fault in this goroutine (SIGBUS or
// SIGSEGV reading a mapped file) into ErrFault instead of the end of the
// process, so that a full disk at start leaves bench-serve unavailable and
// the live metrics served.
func guardFault(f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(interface{ Addr() uintptr }); !ok {
				panic(r) // not a fault: not ours to hide
			}
			err = ErrFault
		}
	}()
	return f()
}
