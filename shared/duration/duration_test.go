package duration

import (
	"testing"
	"time"
)

func TestMs(t *testing.T) {
	for _, tc := range []struct {
		ms   float64
		want string
	}{
		{0, "0.0 ms"},
		{12.34, "12.3 ms"},
		{99.94, "99.9 ms"},
		{99.96, "100 ms"},
		{450.6, "451 ms"},
		{999.4, "999 ms"},
		{999.6, "1.00 s"},
		{1320, "1.32 s"},
		{9_994, "9.99 s"},
		{9_996, "10.0 s"},
		{12_500, "12.5 s"},
		{59_940, "59.9 s"},
		{59_960, "1 min 00 s"},
		{61_000, "1 min 01 s"},
		{245_400, "4 min 05 s"},
		{3_599_000, "59 min 59 s"},
		{3_600_000, "1 h 00 min"},
		{7_620_000, "2 h 07 min"},
	} {
		if got := Ms(tc.ms); got != tc.want {
			t.Errorf("Ms(%v) = %q, want %q", tc.ms, got, tc.want)
		}
	}
}

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{500 * time.Millisecond, "500 ms"},
		{5 * time.Second, "5.00 s"},
		{90 * time.Second, "1 min 30 s"},
		{70 * time.Second, "1 min 10 s"},
	} {
		if got := Of(tc.d); got != tc.want {
			t.Errorf("Of(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestWhole(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0 s"},
		{-time.Second, "0 s"},
		{400 * time.Millisecond, "0 s"},
		{6 * time.Second, "6 s"},
		{59*time.Second + 400*time.Millisecond, "59 s"},
		{59*time.Second + 600*time.Millisecond, "1 min 00 s"},
		{245 * time.Second, "4 min 05 s"},
		{2*time.Hour + 7*time.Minute, "2 h 07 min"},
	} {
		if got := Whole(tc.d); got != tc.want {
			t.Errorf("Whole(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
