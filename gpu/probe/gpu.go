package probe

import "errors"

// ErrNoGPU starts every error that means there is no GPU to read.
var ErrNoGPU = errors.New("no GPU found")

// Device is one GPU.
type Device struct {
	Index       int
	Name        string
	MemoryTotal int64
	MemoryUsed  int64
}
