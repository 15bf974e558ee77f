package probe

import (
	"errors"
	"strings"
	"testing"
)

func TestDeviceMemoryOf(t *testing.T) {
	want := map[uint32]bool{10: true, 11: true}
	tests := []struct {
		name    string
		procs   []procMemory
		want    int64
		wantErr bool
	}{
		{"the group's processes only", []procMemory{{10, 100}, {11, 50}, {99, 1 << 30}}, 150, false},
		{"compute and graphics contexts of one process count once", []procMemory{{10, 100}, {10, 100}}, 100, false},
		{"none of ours", []procMemory{{99, 7}}, 0, false},
		{"not available is an error, not 0", []procMemory{{10, 100}, {11, memoryNotAvailable}}, 0, true},
		{"another's unavailable memory does not matter", []procMemory{{10, 100}, {99, memoryNotAvailable}}, 100, false},
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

func TestGroupMemory(t *testing.T) {
	const mib = 1 << 20
	// This PID namespace has the group (10, 11) and an unrelated process
	// 20; 4001234 and 4001235 are host pids it does not have.
	here := func(pid uint32) bool { return pid == 10 || pid == 11 || pid == 20 }
	want := map[uint32]bool{10: true, 11: true}
	tests := []struct {
		name string
		devs []deviceUse
		want int64
		// wide > 0: an *UnattributedError with this DeviceWide, whose
		// reason holds reason.
		wide   int64
		reason string
		// err: another error.
		err bool
	}{
		{name: "one namespace: NVML's pids are the group's",
			devs: []deviceUse{{procs: []procMemory{{10, 900 * mib}, {20, 300 * mib}}, used: 1700 * mib, idle: 500 * mib}},
			want: 900 * mib},
		{name: "one namespace: the group is not on the GPU yet, another process is",
			devs: []deviceUse{{procs: []procMemory{{20, 300 * mib}}, used: 800 * mib, idle: 500 * mib}},
			want: 0},
		{name: "idle device, nothing listed",
			devs: []deviceUse{{used: 500 * mib, idle: 500 * mib}},
			want: 0},
		{name: "a rise under the slack is not a process's",
			devs: []deviceUse{{used: 510 * mib, idle: 500 * mib}},
			want: 0},
		{name: "container: host pids while the memory rose",
			devs: []deviceUse{{procs: []procMemory{{4001234, 1200 * mib}, {4001234, 1200 * mib}, {4001235, 10 * mib}}, used: 1800 * mib, idle: 500 * mib}},
			wide: 1300 * mib, reason: "device 0: its memory in use rose by 1300 MiB, but NVML lists no process of this PID namespace on it: it lists pids 4001234, 4001235, which this PID namespace does not have"},
		{name: "container: nothing listed while the memory rose",
			devs: []deviceUse{{index: 1, used: 2000 * mib, idle: 0}},
			wide: 2000 * mib, reason: "device 1: its memory in use rose by 2000 MiB, but NVML lists no process of this PID namespace on it: it lists no process"},
		{name: "two devices: one attributed, one hidden",
			devs: []deviceUse{
				{index: 0, procs: []procMemory{{11, 400 * mib}}, used: 900 * mib, idle: 500 * mib},
				{index: 1, procs: []procMemory{{4001234, 700 * mib}}, used: 1200 * mib, idle: 500 * mib},
			},
			wide: 1100 * mib, reason: "device 1:"},
		{name: "many host pids are named up to a bound",
			devs: []deviceUse{{procs: []procMemory{{4000001, mib}, {4000002, mib}, {4000003, mib}, {4000004, mib}, {4000005, mib}}, used: 600 * mib}},
			wide: 600 * mib, reason: "pids 4000001, 4000002, 4000003, 4000004, …,"},
		{name: "unavailable memory of the group is an error, not device-wide",
			devs: []deviceUse{{procs: []procMemory{{10, memoryNotAvailable}}, used: 900 * mib, idle: 500 * mib}},
			err:  true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := groupMemory(tt.devs, want, here)
			var ua *UnattributedError
			switch {
			case tt.err:
				if err == nil || errors.As(err, &ua) {
					t.Fatalf("groupMemory = %d, %v; want a plain error", got, err)
				}
			case tt.wide > 0:
				if !errors.As(err, &ua) || ua.DeviceWide != tt.wide || !strings.Contains(ua.Reason, tt.reason) {
					t.Fatalf("groupMemory = %d, %v; want device-wide %d with %q", got, err, tt.wide, tt.reason)
				}
			default:
				if err != nil || got != tt.want {
					t.Fatalf("groupMemory = %d, %v; want %d", got, err, tt.want)
				}
			}
		})
	}
}

func TestDescribeDevices(t *testing.T) {
	tests := []struct {
		devs []Device
		want string
	}{
		{[]Device{{Name: "NVIDIA H200", MemoryTotal: 143771 << 20}}, "NVIDIA H200 (140.40 GiB)"},
		{[]Device{{Name: "A", MemoryTotal: 8 << 30}, {Index: 1, Name: "B"}}, "A (8.00 GiB), B"},
		{[]Device{{Index: 2}}, "GPU 2"},
		{nil, ""},
	}
	for _, tt := range tests {
		if got := describeDevices(tt.devs); got != tt.want {
			t.Errorf("describeDevices(%+v) = %q, want %q", tt.devs, got, tt.want)
		}
	}
}
