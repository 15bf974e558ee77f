package main

import (
	"os"
	"os/signal"
	"syscall"
)

// surviveSupervisorLoss keeps the runner going to its record when the
// backend that started it dies (kill -9 of serve):
//
//   - its stdout and stderr are pipes into serve, which no one reads any
//     more, and Go ends a program at its first write to a broken stdout,
//     before the record is saved. With SIGPIPE notified the write fails
//     with EPIPE instead. Notify, not Ignore: an ignored signal stays
//     ignored in the servers the runner starts, a notified one does not.
//   - the kernel's parent-death SIGTERM cancels the run, and the restarted
//     serve's recovery sends the runner's group another SIGTERM. A second
//     SIGTERM ends other commands at once (signalContext); the runner
//     takes it as the same request, so it still stops its servers and
//     writes its record. What bounds it is the backend's SIGKILL after
//     the grace period, and SIGINT (a person at a terminal) still ends it
//     at the second press.
func surviveSupervisorLoss() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE, syscall.SIGTERM)
}
