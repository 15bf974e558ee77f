package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/gpu/probe"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// The peak GPU memory a cell records from the probe's readings: the
// server's own, null with the reason, or the labelled device-wide figure
// where NVML cannot attribute the GPU's memory (a container's PID
// namespace), never a silent 0.
func TestMemorySamplerGPU(t *testing.T) {
	type reading struct {
		bytes int64
		err   error
	}
	hidden := &probe.UnattributedError{DeviceWide: 1500, Reason: "device 0: its memory in use rose by 1500 MiB"}
	tests := []struct {
		name     string
		readings []reading
		want     int64 // -1: null
		note     string
	}{
		{"the server's own peak", []reading{{100, nil}, {300, nil}, {200, nil}}, 300, ""},
		{"no reading yet", nil, 0, ""},
		{"unreadable: null with the reason", []reading{{100, nil}, {0, errors.New("NVML device 0: boom")}}, -1, "unavailable: NVML device 0: boom"},
		{"unattributable: the device-wide peak, labelled", []reading{{0, nil}, {0, &probe.UnattributedError{DeviceWide: 900}}, {0, hidden}}, 1500, deviceWidePrefix + "device 0: its memory in use rose by 1500 MiB; the figure is"},
		{"unreadable wins over device-wide", []reading{{0, hidden}, {0, errors.New("boom")}}, -1, "unavailable: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &memorySampler{}
			for _, r := range tt.readings {
				s.addGPU(r.bytes, r.err)
			}
			var res bench.CellResult
			s.fill(&res)
			switch {
			case tt.want < 0 && res.PeakGPUMemoryBytes != nil:
				t.Fatalf("peak = %d, want null", *res.PeakGPUMemoryBytes)
			case tt.want >= 0 && (res.PeakGPUMemoryBytes == nil || *res.PeakGPUMemoryBytes != tt.want):
				t.Fatalf("peak = %v, want %d", res.PeakGPUMemoryBytes, tt.want)
			}
			if !strings.HasPrefix(res.GPUMemoryNote, tt.note) || (tt.note == "") != (res.GPUMemoryNote == "") {
				t.Errorf("note = %q, want it to start with %q", res.GPUMemoryNote, tt.note)
			}
		})
	}
}
