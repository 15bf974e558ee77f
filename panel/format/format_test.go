package format

import (
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	defer func(l *time.Location) { Location = l }(Location)
	Location = time.UTC
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name, got, want string
	}{
		{"bytes GiB", Bytes(3 << 30), "3.00 GiB"},
		{"bytes in the column's GiB", BytesIn(638<<20, UnitOf(638<<20, 4<<30)), "0.62 GiB"},
		{"rate high", Rate(1234.4), "1,234 tok/s"},
		{"rate hundreds", Rate(327.5), "328 tok/s"},
		{"rate mid", Rate(42.25), "42.2 tok/s"},
		{"rate low", Rate(3.14159), "3.14 tok/s"},
		{"requests high", Requests(1234.4), "1,234 req/s"},
		{"requests low", Requests(4), "4.00 req/s"},
		{"ms small", Ms(12.34), "12.3 ms"},
		{"ms mid", Ms(450.6), "451 ms"},
		{"ms a second", Ms(1320), "1.32 s"},
		{"ms seconds", Ms(12500), "12.5 s"},
		{"ms minutes", Ms(245_400), "4 min 05 s"},
		{"ms hours", Ms(7_620_000), "2 h 07 min"},
		{"duration", Duration(90 * time.Second), "1 min 30 s"},
		{"duration short", Duration(500 * time.Millisecond), "500 ms"},
		{"ms nil", MsPtr(nil), Dash},
		{"ms ptr", MsPtr(f(5)), "5.0 ms"},
		{"rate nil", RatePtr(nil), Dash},
		{"percent", Percent(0.4567), "45.7%"},
		{"clock zero", Clock(0), Dash},
		{"clock", Clock(1764690000000), "15:40:00"},
		{"when", When(1764690000000), "2025-12-02 15:40 UTC"},
		{"count", Count(1234567), "1,234,567"},
		{"when in a zone", func() string {
			Location = time.FixedZone("CET", 3600)
			defer func() { Location = time.UTC }()
			return When(1764690000000)
		}(), "2025-12-02 16:40 CET"},
		{"count small", Count(12), "12"},
		{"count negative", Count(-1234), "-1,234"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
