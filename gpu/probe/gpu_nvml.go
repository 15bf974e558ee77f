//go:build linux && cgo

package probe

import (
	"fmt"
	"math"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// GPU is an open NVML session.
type GPU struct{ once sync.Once }

// OpenGPU loads NVML. Without libnvidia-ml, or with no device, it fails
// with an error wrapping ErrNoGPU that says which.
func OpenGPU() (*GPU, error) {
	if ret := nvml.Init(); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
			return nil, fmt.Errorf("%w (libnvidia-ml is not installed; NVML reads NVIDIA GPUs only)", ErrNoGPU)
		}
		return nil, fmt.Errorf("%w (NVML: %s)", ErrNoGPU, nvml.ErrorString(ret))
	}
	g := &GPU{}
	n, ret := nvml.DeviceGetCount()
	if ret != nvml.SUCCESS || n == 0 {
		g.Close()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("%w (NVML: %s)", ErrNoGPU, nvml.ErrorString(ret))
		}
		return nil, fmt.Errorf("%w (NVML sees no device)", ErrNoGPU)
	}
	return g, nil
}

// Close releases NVML.
func (g *GPU) Close() { g.once.Do(func() { nvml.Shutdown() }) }

// Devices lists the GPUs with their memory.
func (g *GPU) Devices() ([]Device, error) {
	n, ret := nvml.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML device count: %s", nvml.ErrorString(ret))
	}
	devs := make([]Device, 0, n)
	for i := range n {
		d, ret := nvml.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("NVML device %d: %s", i, nvml.ErrorString(ret))
		}
		dev := Device{Index: i}
		dev.Name, _ = d.GetName()
		if mem, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
			dev.MemoryTotal, dev.MemoryUsed = int64(mem.Total), int64(mem.Used)
		}
		devs = append(devs, dev)
	}
	return devs, nil
}

// ProcessMemory is the GPU memory the given processes hold, over every
// device (compute and graphics contexts).
func (g *GPU) ProcessMemory(pids []int) (int64, error) {
	want := make(map[uint32]bool, len(pids))
	for _, p := range pids {
		want[uint32(p)] = true
	}
	n, ret := nvml.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return 0, fmt.Errorf("NVML device count: %s", nvml.ErrorString(ret))
	}
	var total int64
	for i := range n {
		d, ret := nvml.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return 0, fmt.Errorf("NVML device %d: %s", i, nvml.ErrorString(ret))
		}
		var procs []nvml.ProcessInfo
		for _, list := range []func() ([]nvml.ProcessInfo, nvml.Return){d.GetComputeRunningProcesses, d.GetGraphicsRunningProcesses} {
			if ps, ret := list(); ret == nvml.SUCCESS {
				procs = append(procs, ps...)
			}
		}
		used, err := deviceMemoryOf(procs, want)
		if err != nil {
			return 0, fmt.Errorf("NVML device %d: %w", i, err)
		}
		total += used
	}
	return total, nil
}

// deviceMemoryOf sums one device's memory of the processes in want. A
// process with both a compute and a graphics context is listed twice with
// the same memory, so it counts once; one whose memory NVML cannot read
// (it says VALUE_NOT_AVAILABLE) makes the figure unavailable, not smaller.
func deviceMemoryOf(procs []nvml.ProcessInfo, want map[uint32]bool) (int64, error) {
	seen := make(map[uint32]bool, len(procs))
	var total int64
	for _, p := range procs {
		if !want[p.Pid] || seen[p.Pid] {
			continue
		}
		seen[p.Pid] = true
		if p.UsedGpuMemory == math.MaxUint64 {
			return 0, fmt.Errorf("the memory of process %d is not available to NVML", p.Pid)
		}
		total += int64(p.UsedGpuMemory)
	}
	return total, nil
}
