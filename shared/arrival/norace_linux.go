//go:build linux && !race

package arrival

// raceAcquireIO is needed by the race detector only (see its race twin).
func raceAcquireIO(uintptr) {}
