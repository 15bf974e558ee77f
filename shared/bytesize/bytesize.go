// Package bytesize says sizes for people, in binary units, by one rule for
// the panel and the command line alike (report.md, bench show, the GPU
// names the runner prints): two decimals from GiB up, one in KiB and MiB.
package bytesize

import (
	"math"
	"strconv"
	"strings"
)

// Unit is a binary unit of size.
type Unit struct {
	Name  string // B, KiB, MiB, GiB, TiB
	Bytes int64  // bytes in one unit
}

var units = []Unit{{"B", 1}, {"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}}

// UnitOf is the binary unit of the largest of sizes. A column of sizes, and
// the chart beside it, show every size in it, so that one quantity reads
// in one unit ("0.62 GiB" of KV beside "4.00 GiB" of weights, not "638.0
// MiB").
func UnitOf(sizes ...int64) Unit {
	var most int64
	for _, n := range sizes {
		most = max(most, n)
	}
	u := units[0]
	for _, next := range units[1:] {
		if most < next.Bytes {
			break
		}
		u = next
	}
	return u
}

// In renders n in u: two decimals from GiB up, one in KiB and MiB, none
// in bytes. A size too small to show in u is "< 0.01 GiB", not zero.
func In(n int64, u Unit) string {
	decimals := 1
	switch {
	case u.Bytes == 1:
		return strconv.FormatInt(n, 10) + " B"
	case u.Bytes >= 1<<30:
		decimals = 2
	}
	v := float64(n) / float64(u.Bytes)
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if n > 0 && strings.Trim(s, "0.") == "" {
		return "< " + strconv.FormatFloat(math.Pow10(-decimals), 'f', decimals, 64) + " " + u.Name
	}
	return s + " " + u.Name
}

// Format renders n in its own binary unit.
func Format(n int64) string { return In(n, UnitOf(n)) }
