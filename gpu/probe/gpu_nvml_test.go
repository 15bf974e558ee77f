//go:build linux && cgo

package probe

import (
	"math"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

func TestDeviceMemoryOf(t *testing.T) {
	want := map[uint32]bool{10: true, 11: true}
	tests := []struct {
		name    string
		procs   []nvml.ProcessInfo
		want    int64
		wantErr bool
	}{
		{"the group's processes only", []nvml.ProcessInfo{{Pid: 10, UsedGpuMemory: 100}, {Pid: 11, UsedGpuMemory: 50}, {Pid: 99, UsedGpuMemory: 1 << 30}}, 150, false},
		{"compute and graphics contexts of one process count once", []nvml.ProcessInfo{{Pid: 10, UsedGpuMemory: 100}, {Pid: 10, UsedGpuMemory: 100}}, 100, false},
		{"none of ours", []nvml.ProcessInfo{{Pid: 99, UsedGpuMemory: 7}}, 0, false},
		{"not available is an error, not 0", []nvml.ProcessInfo{{Pid: 10, UsedGpuMemory: 100}, {Pid: 11, UsedGpuMemory: math.MaxUint64}}, 0, true},
		{"another's unavailable memory does not matter", []nvml.ProcessInfo{{Pid: 10, UsedGpuMemory: 100}, {Pid: 99, UsedGpuMemory: math.MaxUint64}}, 100, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := deviceMemoryOf(tt.procs, want)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("deviceMemoryOf = %d, %v; want %d, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
