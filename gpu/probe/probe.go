// Package probe reads the machine a benchmark runs on: its chip, memory,
// host and OS, the GPUs NVML can see (with a clear "no GPU found" where
// there are none), and the resident memory of a server's processes.
package probe

import (
	"os"
	"runtime"
	"strings"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// Machine describes this machine. GPU is the NVML word: device names, or
// why there are none ("no GPU found: …").
func Machine() bench.Machine {
	m := bench.Machine{OS: osName(), Chip: chip(), MemoryBytes: memoryBytes()}
	m.Host, _ = os.Hostname()
	if m.Chip == "" {
		m.Chip = runtime.GOARCH
	}
	m.GPU = DescribeGPUs()
	return m
}

// DescribeGPUs names the GPUs with their memory ("NVIDIA H200 (139.8
// GiB)"), or says why there are none.
func DescribeGPUs() string {
	g, err := OpenGPU()
	if err != nil {
		return err.Error()
	}
	defer g.Close()
	devs, err := g.Devices()
	if err != nil {
		return err.Error()
	}
	return describeDevices(devs)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSpace(s)
}
