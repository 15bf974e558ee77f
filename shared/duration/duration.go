// Package duration writes durations for people, one way for the CLI,
// report.md, the job messages and the panel: "12.3 ms", "894 ms", "1.32 s",
// "12.5 s", "4 min 05 s", "2 h 07 min" (never Go's 1m30s).
package duration

import (
	"fmt"
	"math"
	"time"
)

// Ms writes a duration given in milliseconds: tenths of a millisecond
// under 100 ms, whole milliseconds under a second, hundredths of a second
// under 10 s, tenths under a minute, then minutes and seconds, and from an
// hour hours and minutes. Each bound is where the finer form would round up
// to the next one ("1000 ms", "60.0 s").
func Ms(ms float64) string {
	switch {
	case ms < 99.95:
		return fmt.Sprintf("%.1f ms", ms)
	case ms < 999.5:
		return fmt.Sprintf("%.0f ms", ms)
	case ms < 9_995:
		return fmt.Sprintf("%.2f s", ms/1000)
	case ms < 59_950:
		return fmt.Sprintf("%.1f s", ms/1000)
	}
	s := int64(math.Round(ms / 1000))
	if s < 3600 {
		return fmt.Sprintf("%d min %02d s", s/60, s%60)
	}
	m := (s + 30) / 60 // to the nearest minute
	return fmt.Sprintf("%d h %02d min", m/60, m%60)
}

// Of is Ms of d.
func Of(d time.Duration) string { return Ms(float64(d) / float64(time.Millisecond)) }

// Whole writes a duration known to the second, such as an elapsed time
// that ticks each second or an estimate: "0 s", "42 s", and from a minute
// as Ms ("4 min 05 s"); never "0.0 ms" or "6.00 s".
func Whole(d time.Duration) string {
	d = d.Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%d s", max(int64(d/time.Second), 0))
	}
	return Of(d)
}
