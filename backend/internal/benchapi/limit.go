package benchapi

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// parseLimit reads a limit query of this module's own (GET /bench, the
// history's CSV): def when absent, else 1..max, and anything else refused.
func parseLimit(s string, def, max int) (int, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || (max > 0 && n > max) {
		if max > 0 {
			return 0, fmt.Errorf("limit %q is not a whole number from 1 to %d", capEcho(s), max)
		}
		return 0, fmt.Errorf("limit %q is not a whole number from 1", capEcho(s))
	}
	return n, nil
}

// historyLimit reads GET /history's limit exactly as the original does,
// so that every request of its clients gets the same runs: absent, or not
// a finite number to JavaScript's Number(), is 50; an empty value is 0 and
// so, as every number below 1, 1; a fraction is cut (2.5 is 2). Above
// MaxHistoryLimit it is MaxHistoryLimit (the original has no bound).
func historyLimit(s string, present bool) int {
	if !present {
		return DefaultHistoryLimit
	}
	x := jsNumber(s)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return DefaultHistoryLimit
	}
	return int(min(math.Trunc(max(x, 1)), MaxHistoryLimit))
}

// jsDecimal is JavaScript's StrDecimalLiteral without Infinity.
var jsDecimal = regexp.MustCompile(`^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$`)

// jsNumber is JavaScript's Number(s) for a string (ECMA-262
// StringToNumber): surrounding white space is ignored, empty is 0,
// decimal and 0x/0o/0b literals and ±Infinity are numbers, the rest NaN.
// Go's ParseFloat is wider (inf, nan, hex floats, underscores), so the
// syntax is checked first.
func jsNumber(s string) float64 {
	s = strings.TrimFunc(s, jsSpace)
	switch s {
	case "":
		return 0
	case "Infinity", "+Infinity":
		return math.Inf(1)
	case "-Infinity":
		return math.Inf(-1)
	}
	if len(s) > 2 && s[0] == '0' {
		if base := map[byte]int{'x': 16, 'X': 16, 'o': 8, 'O': 8, 'b': 2, 'B': 2}[s[1]]; base != 0 {
			digits := s[2:]
			for _, r := range digits {
				if !strings.ContainsRune("0123456789abcdef"[:base], unicode.ToLower(r)) {
					return math.NaN()
				}
			}
			n, _ := new(big.Int).SetString(digits, base)
			f, _ := new(big.Float).SetInt(n).Float64() // ±Inf past the float range, as JavaScript
			return f
		}
	}
	if !jsDecimal.MatchString(s) {
		return math.NaN()
	}
	f, _ := strconv.ParseFloat(s, 64) // out of range: ±Inf or 0, as JavaScript
	return f
}

// jsSpace is JavaScript's WhiteSpace and LineTerminator.
func jsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', '\uFEFF', '\u2028', '\u2029':
		return true
	}
	return unicode.Is(unicode.Zs, r)
}
