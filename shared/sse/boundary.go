package sse

// EventEnd is the length of b up to the end of its last blank line, where
// an event ends as Reader reads the stream, or 0 when b has none: for a
// relay that passes events on whole. prev are the two bytes before b (zero
// at the stream's start), in which a blank line may begin; b[:from] is
// known to end none, so only blank lines ending from there are looked for.
//
// It looks back from b's end, and so costs nothing per byte of an event
// that ends a read. A CR ends a line at once, and an LF after it belongs to
// that line end; so a blank line after an LF that ends in CR is cut only
// once the next byte is known, and a CRLF is never cut in two.
func EventEnd(prev [2]byte, b []byte, from int) int {
	at := func(i int) byte {
		if i < 0 {
			return prev[2+i]
		}
		return b[i]
	}
	// The byte before from: a CR there, after an LF, ended a blank line
	// if the next byte, now known, is not an LF.
	for i := len(b) - 1; i >= max(from-1, 0); i-- {
		c := b[i]
		if c != '\n' && c != '\r' {
			continue
		}
		before := at(i - 1)
		switch {
		case i >= from && c == '\n' && (before == '\n' || before == '\r' && lineEnd(at(i-2))):
			return i + 1 // LF after a line end, or CRLF after one
		case i >= from && c == '\r' && before == '\r':
			return i + 1 // CR after a CR
		case c == '\r' && before == '\n' && i+1 < len(b) && b[i+1] != '\n':
			return i + 1 // CR after an LF, not the start of a CRLF
		}
	}
	return 0
}

func lineEnd(c byte) bool { return c == '\n' || c == '\r' }
