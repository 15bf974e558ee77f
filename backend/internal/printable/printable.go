// Package printable makes text from outside (a model name, an upstream's
// or a collector's error, a store's label) safe to show and to export:
// valid UTF-8, no control character a terminal or an exposition would act
// on, no bidi control that would show it reversed, and bounded.
package printable

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Cut is s with invalid UTF-8, control and bidi control characters each
// made U+FFFD, cut to at most n bytes before a rune the cut would split.
func Cut(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexFunc(s, unsafe) >= 0 {
		s = strings.Map(func(r rune) rune {
			if unsafe(r) {
				return utf8.RuneError
			}
			return r
		}, s)
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func unsafe(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) }
