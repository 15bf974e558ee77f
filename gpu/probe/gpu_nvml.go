//go:build linux && cgo

package probe

import (
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// GPU is an open NVML session.
type GPU struct {
	once sync.Once
	// idle is each device's memory in use when the GPU was opened: the
	// baseline of ProcessMemory's device-wide figure.
	idle map[int]int64
}

// OpenGPU loads NVML. Without libnvidia-ml, or with no device, it fails
// with an error wrapping ErrNoGPU that says which.
func OpenGPU() (*GPU, error) {
	if ret := nvml.Init(); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
			return nil, fmt.Errorf("%w (libnvidia-ml is not installed; NVML reads NVIDIA GPUs only)", ErrNoGPU)
		}
		return nil, fmt.Errorf("%w (NVML: %s)", ErrNoGPU, nvml.ErrorString(ret))
	}
	g := &GPU{idle: map[int]int64{}}
	n, ret := nvml.DeviceGetCount()
	if ret != nvml.SUCCESS || n == 0 {
		g.Close()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("%w (NVML: %s)", ErrNoGPU, nvml.ErrorString(ret))
		}
		return nil, fmt.Errorf("%w (NVML sees no device)", ErrNoGPU)
	}
	if devs, err := g.Devices(); err == nil {
		for _, d := range devs {
			g.idle[d.Index] = d.MemoryUsed
		}
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
// device (compute and graphics contexts). Where NVML's pids are not this
// PID namespace's while a device's memory in use has risen since OpenGPU,
// the error is an *UnattributedError with the device-wide figure.
func (g *GPU) ProcessMemory(pids []int) (int64, error) {
	want := make(map[uint32]bool, len(pids))
	for _, p := range pids {
		want[uint32(p)] = true
	}
	n, ret := nvml.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return 0, fmt.Errorf("NVML device count: %s", nvml.ErrorString(ret))
	}
	devs := make([]deviceUse, 0, n)
	for i := range n {
		d, ret := nvml.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return 0, fmt.Errorf("NVML device %d: %s", i, nvml.ErrorString(ret))
		}
		du := deviceUse{index: i, idle: g.idle[i]}
		for _, list := range []func() ([]nvml.ProcessInfo, nvml.Return){d.GetComputeRunningProcesses, d.GetGraphicsRunningProcesses} {
			if ps, ret := list(); ret == nvml.SUCCESS {
				for _, p := range ps {
					du.procs = append(du.procs, procMemory{pid: p.Pid, used: p.UsedGpuMemory})
				}
			}
		}
		du.used = du.idle // unread: no rise
		if mem, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
			du.used = int64(mem.Used)
		}
		devs = append(devs, du)
	}
	return groupMemory(devs, want, pidHere)
}

// pidHere says whether this PID namespace has a process pid.
func pidHere(pid uint32) bool {
	_, err := os.Stat("/proc/" + strconv.FormatUint(uint64(pid), 10))
	return err == nil
}
