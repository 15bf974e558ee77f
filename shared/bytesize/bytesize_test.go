package bytesize

import "testing"

func TestFormat(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"bytes small", Format(512), "512 B"},
		{"KiB", Format(1536), "1.5 KiB"},
		{"GiB", Format(3 << 30), "3.00 GiB"},
		{"a machine's memory", Format(2254857830), "2.10 GiB"},
		{"MiB", Format(638 << 20), "638.0 MiB"},
		{"in the column's GiB", In(638<<20, UnitOf(638<<20, 4<<30)), "0.62 GiB"},
		{"too small for the unit", In(3<<20, UnitOf(3<<20, 4<<30)), "< 0.01 GiB"},
		{"zero in GiB", In(0, UnitOf(0, 4<<30)), "0.00 GiB"},
		{"in MiB", In(512<<10, UnitOf(512<<10, 300<<20)), "0.5 MiB"},
		{"unit of nothing", UnitOf().Name, "B"},
		{"TiB", Format(3 << 40), "3.00 TiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}
