//go:build linux && race

package arrival

import "syscall"

// raceAcquireIO tells the race detector what a read through syscall.Read
// would: that it comes after the writes the bytes answer (it orders I/O
// through one variable that syscall.Read acquires and Write releases;
// Recvmsg skips it). A read of no bytes does only that.
func raceAcquireIO(fd uintptr) { _, _ = syscall.Read(int(fd), nil) }
