package benchapi

import (
	"math"
	"strconv"
	"testing"
)

// The values JavaScript's Number() gives, as a browser's console shows them.
func TestJSNumber(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		in   string
		want float64
	}{
		{"", 0}, {"  ", 0}, {"7", 7}, {" 7\t\n", 7}, {"\u00a07\u3000", 7}, {"\ufeff7", 7}, {"+7", 7}, {"-7", -7},
		{"2.5", 2.5}, {".5", 0.5}, {"5.", 5}, {"1e2", 100}, {"1E+2", 100}, {"1e-2", 0.01}, {"1e400", math.Inf(1)},
		{"0x10", 16}, {"0X1f", 31}, {"0o17", 15}, {"0b101", 5}, {"Infinity", math.Inf(1)}, {"-Infinity", math.Inf(-1)},
		{"007", 7}, {"00x10", nan}, {"-0x10", nan}, {"0x", nan}, {"0x1g", nan}, {"0b2", nan}, {"1_000", nan},
		{"inf", nan}, {"NaN", nan}, {"infinity", nan}, {"0x1p3", nan}, {".", nan}, {"e5", nan}, {"1e", nan},
		{"7 7", nan}, {"ten", nan}, {"\u00857", nan}, {"\xff", nan}, {"1,000", nan},
	}
	for _, tt := range tests {
		got := jsNumber(tt.in)
		if got != tt.want && !(math.IsNaN(got) && math.IsNaN(tt.want)) {
			t.Errorf("jsNumber(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestHistoryLimit(t *testing.T) {
	tests := []struct {
		in      string
		present bool
		want    int
	}{
		{"", false, 50}, {"", true, 1}, {"abc", true, 50}, {"0", true, 1}, {"-3", true, 1}, {"0.5", true, 1},
		{"1.9", true, 1}, {"2.5", true, 2}, {"999.99", true, 999}, {"1000", true, 1000}, {"1001", true, 1000},
		{"1e308", true, 1000}, {"1e999", true, 50}, {"-Infinity", true, 50},
	}
	for _, tt := range tests {
		if got := historyLimit(tt.in, tt.present); got != tt.want {
			t.Errorf("historyLimit(%q, %v) = %d, want %d", tt.in, tt.present, got, tt.want)
		}
	}
}

// FuzzHistoryLimit: any query value gives a limit from 1 to 1000, and a
// plain decimal is read as Go reads it.
func FuzzHistoryLimit(f *testing.F) {
	for _, seed := range []string{"", "50", "2.5", "-1", "1e2", "0x10", "0b", "Infinity", " 7 ", "1e999", "\u30007"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := historyLimit(s, true)
		if n < 1 || n > MaxHistoryLimit {
			t.Fatalf("historyLimit(%q) = %d", s, n)
		}
		if x, err := strconv.ParseFloat(s, 64); err == nil && jsDecimal.MatchString(s) && jsNumber(s) != x {
			t.Fatalf("jsNumber(%q) = %v, ParseFloat %v", s, jsNumber(s), x)
		}
	})
}
