package probe

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/mlx-bun/mlx-metrics/shared/bytesize"
)

// UnattributedError says that NVML cannot tell which of the GPU's memory
// is the group's, while the GPU's memory in use has risen: inside a
// container with its own PID namespace, NVML lists the GPU's processes by
// the host's pids (or lists none), so the group's never match and their
// sum would read 0. DeviceWide is the figure that can be read instead.
type UnattributedError struct {
	// DeviceWide is the devices' memory in use over their use when the
	// GPU was opened (with what NVML did attribute to the group on any
	// other device): it counts whatever else ran on those devices.
	DeviceWide int64
	Reason     string
}

func (e *UnattributedError) Error() string { return e.Reason }

// procMemory is one process NVML lists on a device: its pid as NVML gives
// it and the memory it holds (memoryNotAvailable when NVML cannot read it).
type procMemory struct {
	pid  uint32
	used uint64
}

// memoryNotAvailable is NVML's VALUE_NOT_AVAILABLE for a process's memory.
const memoryNotAvailable = math.MaxUint64

// deviceUse is one device as NVML sees it in one sample.
type deviceUse struct {
	index int
	procs []procMemory
	used  int64 // the device's memory in use now
	idle  int64 // its memory in use when the GPU was opened
}

// attributionSlack is the rise in a device's memory in use that is taken
// for a process's: below it, the rise is the driver's own bookkeeping.
const attributionSlack = 32 << 20

// groupMemory sums the memory of the processes in want over the devices.
// here says whether a pid is a process of this PID namespace. A device
// whose memory in use rose over its idle figure by more than
// attributionSlack, while NVML lists none of this namespace's processes on
// it, makes the sum unknowable: the result is then an *UnattributedError
// (the no-GPU and same-namespace cases are as before).
func groupMemory(devs []deviceUse, want map[uint32]bool, here func(uint32) bool) (int64, error) {
	var total, wide int64
	var hidden []string
	for _, d := range devs {
		used, err := deviceMemoryOf(d.procs, want)
		if err != nil {
			return 0, fmt.Errorf("NVML device %d: %w", d.index, err)
		}
		total += used
		if rise := d.used - d.idle; rise > attributionSlack && !listsThisNamespace(d.procs, want, here) {
			wide += rise
			hidden = append(hidden, hiddenReason(d, rise))
			continue
		}
		wide += used
	}
	if len(hidden) > 0 {
		return 0, &UnattributedError{DeviceWide: wide, Reason: strings.Join(hidden, "; ")}
	}
	return total, nil
}

// deviceMemoryOf sums one device's memory of the processes in want. A
// process with both a compute and a graphics context is listed twice with
// the same memory, so it counts once; one whose memory NVML cannot read
// (it says VALUE_NOT_AVAILABLE) makes the figure unavailable, not smaller.
func deviceMemoryOf(procs []procMemory, want map[uint32]bool) (int64, error) {
	seen := make(map[uint32]bool, len(procs))
	var total int64
	for _, p := range procs {
		if !want[p.pid] || seen[p.pid] {
			continue
		}
		seen[p.pid] = true
		if p.used == memoryNotAvailable {
			return 0, fmt.Errorf("the memory of process %d is not available to NVML", p.pid)
		}
		total += int64(p.used)
	}
	return total, nil
}

// listsThisNamespace says whether one of procs is a process of this PID
// namespace: one of the group's, or any other that exists here.
func listsThisNamespace(procs []procMemory, want map[uint32]bool, here func(uint32) bool) bool {
	for _, p := range procs {
		if want[p.pid] || here(p.pid) {
			return true
		}
	}
	return false
}

// maxReasonPids bounds the pids a reason names.
const maxReasonPids = 4

func hiddenReason(d deviceUse, rise int64) string {
	listed := "it lists no process (a container's PID namespace hides them)"
	if len(d.procs) > 0 {
		var pids []string
		seen := map[uint32]bool{}
		for _, p := range d.procs {
			if !seen[p.pid] && len(pids) < maxReasonPids {
				pids = append(pids, strconv.FormatUint(uint64(p.pid), 10))
			}
			seen[p.pid] = true
		}
		if len(seen) > len(pids) {
			pids = append(pids, "…")
		}
		listed = "it lists pids " + strings.Join(pids, ", ") + ", which this PID namespace does not have (NVML gives a container the host's pids)"
	}
	return fmt.Sprintf("device %d: its memory in use rose by %d MiB, but NVML lists no process of this PID namespace on it: %s", d.index, rise>>20, listed)
}

// describeDevices names each device with its memory.
func describeDevices(devs []Device) string {
	names := make([]string, len(devs))
	for i, d := range devs {
		names[i] = d.Name
		if names[i] == "" {
			names[i] = "GPU " + strconv.Itoa(d.Index)
		}
		if d.MemoryTotal > 0 {
			names[i] += " (" + bytesize.Format(d.MemoryTotal) + ")"
		}
	}
	return strings.Join(names, ", ")
}
