//go:build !(linux && cgo)

package probe

import (
	"fmt"
	"runtime"
)

// GPU is never open in this build: NVML is read through cgo on Linux.
type GPU struct{}

// OpenGPU says why this build reads no GPU.
func OpenGPU() (*GPU, error) {
	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("%w (GPU memory is read through NVML, for NVIDIA GPUs on Linux; not on %s)", ErrNoGPU, runtime.GOOS)
	}
	return nil, fmt.Errorf("%w (this build has no cgo, which NVML needs)", ErrNoGPU)
}

// Close does nothing.
func (g *GPU) Close() {}

// Devices is never reached: OpenGPU fails.
func (g *GPU) Devices() ([]Device, error) { return nil, ErrNoGPU }

// ProcessMemory is never reached: OpenGPU fails.
func (g *GPU) ProcessMemory([]int) (int64, error) { return 0, ErrNoGPU }
