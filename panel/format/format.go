// Package format renders the panel's numbers for people: sizes in binary
// units, rates, durations and times, with a dash for what was not measured.
package format

import (
	"fmt"
	"math"
	"time"
)

// Dash stands for a value that was not measured.
const Dash = "—"

// Bytes renders n in binary units (KiB, MiB, GiB).
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// Rate renders tokens per second.
func Rate(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f tok/s", v)
	case v >= 10:
		return fmt.Sprintf("%.1f tok/s", v)
	default:
		return fmt.Sprintf("%.2f tok/s", v)
	}
}

// Ms renders a duration in milliseconds, switching to seconds from 10 s.
func Ms(v float64) string {
	switch {
	case v >= 10000:
		return fmt.Sprintf("%.1f s", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	default:
		return fmt.Sprintf("%.1f ms", v)
	}
}

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
