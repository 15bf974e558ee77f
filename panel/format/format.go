// Package format renders the panel's numbers for people: sizes in binary
// units, rates, durations and times, with a dash for what was not measured.
package format

import (
	"fmt"
	"math"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bytesize"
	"github.com/mlx-bun/mlx-metrics/shared/duration"
)

// Dash stands for a value that was not measured.
const Dash = "—"

// SizeUnit, UnitOf, BytesIn and Bytes are the one rule for sizes
// (package bytesize), which the command line's reports share.
type SizeUnit = bytesize.Unit

// UnitOf is the binary unit of the largest of sizes (bytesize.UnitOf).
func UnitOf(sizes ...int64) SizeUnit { return bytesize.UnitOf(sizes...) }

// BytesIn renders n in u (bytesize.In).
func BytesIn(n int64, u SizeUnit) string { return bytesize.In(n, u) }

// Bytes renders n in its own binary unit (bytesize.Format).
func Bytes(n int64) string { return bytesize.Format(n) }

// Rate renders tokens per second, with thousands separators as counts and
// the charts' axes have them.
func Rate(v float64) string { return perSecond(v, "tok/s") }

// Requests renders requests per second as Rate renders tokens.
func Requests(v float64) string { return perSecond(v, "req/s") }

func perSecond(v float64, unit string) string {
	switch {
	case v >= 100 && !math.IsInf(v, 1):
		return Count(int64(math.Round(v))) + " " + unit
	case v >= 10:
		return fmt.Sprintf("%.1f %s", v, unit)
	default:
		return fmt.Sprintf("%.2f %s", v, unit)
	}
}

// Ms renders a duration given in milliseconds, the one way the panel and
// the CLI write every duration (shared/duration): "12.3 ms", "894 ms",
// "1.32 s", "12.5 s", "4 min 05 s", "2 h 07 min".
func Ms(v float64) string { return duration.Ms(v) }

// Duration is Ms of d.
func Duration(d time.Duration) string { return duration.Of(d) }

// Whole is d known to the second: "42 s", "4 min 05 s".
func Whole(d time.Duration) string { return duration.Whole(d) }

// MsPtr is Ms, or a dash when v is nil.
func MsPtr(v *float64) string {
	if v == nil {
		return Dash
	}
	return Ms(*v)
}

// RatePtr is Rate, or a dash when v is nil.
func RatePtr(v *float64) string {
	if v == nil {
		return Dash
	}
	return Rate(*v)
}

// Percent renders a share in [0,1] as a percentage.
func Percent(share float64) string {
	if math.IsNaN(share) {
		return Dash
	}
	return fmt.Sprintf("%.1f%%", share*100)
}

// Location is the time zone times are shown in: the browser's (Go's
// js/wasm runtime takes time.Local from the JavaScript Date). Tests pin it.
var Location = time.Local

// Clock renders epoch milliseconds as a wall-clock time.
func Clock(ms int64) string {
	if ms == 0 {
		return Dash
	}
	return time.UnixMilli(ms).In(Location).Format("15:04:05")
}

// When renders epoch milliseconds as a date and time with its zone.
func When(ms int64) string {
	if ms == 0 {
		return Dash
	}
	return time.UnixMilli(ms).In(Location).Format("2006-01-02 15:04 MST")
}

// Count renders an integer with thousands separators.
func Count(n int64) string {
	s := fmt.Sprintf("%d", n)
	if n < 0 {
		return "-" + Count(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
