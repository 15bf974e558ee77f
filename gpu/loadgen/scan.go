package loadgen

import "bytes"

// A stream's chunks are nearly all token chunks, one per token per stream,
// and all the client needs from one is whether it carries generated text.
// scanTokenChunk answers that without json.Unmarshal's reflection and
// allocations. It is exact or it declines: anything it does not fully
// understand (usage, an error, a finish reason, duplicate or escaped or
// non-ASCII keys, a value of an unexpected type, invalid JSON) returns
// ok=false and the chunk goes through json.Unmarshal, so both paths agree
// on every chunk (FuzzScanTokenChunk holds them to it).

// maxScanDepth bounds the nesting the scanner follows before declining.
const maxScanDepth = 32

// scanTokenChunk returns how many choices of a chunk carry generated text
// (text, delta.content or delta.reasoning_content not empty), or ok=false.
func scanTokenChunk(data []byte) (withText int, ok bool) {
	s := scanner{b: data}
	s.space()
	if !s.eat('{') {
		return 0, false
	}
	seen := 0 // bit set of the top-level keys met, to decline duplicates
	for first := true; ; first = false {
		s.space()
		if s.eat('}') {
			break
		}
		if !first && !(s.eat(',') && s.spaceThen()) {
			return 0, false
		}
		key, ok := s.key()
		if !ok {
			return 0, false
		}
		switch string(key) {
		case "choices":
			if seen&1 != 0 {
				return 0, false
			}
			seen |= 1
			n, ok := s.choices()
			if !ok {
				return 0, false
			}
			withText += n
		case "id":
			if seen&2 != 0 || !s.stringOrNull(nil) {
				return 0, false
			}
			seen |= 2
		case "usage", "error", "server_timing":
			return 0, false // the rare chunks: Unmarshal reads them
		default:
			if !s.skipValue(0) {
				return 0, false
			}
		}
	}
	s.space()
	return withText, s.i == len(s.b)
}

// choices reads the choices array: the number of choices with text.
func (s *scanner) choices() (int, bool) {
	s.space()
	if s.literal("null") {
		return 0, true
	}
	if !s.eat('[') {
		return 0, false
	}
	n := 0
	for first := true; ; first = false {
		s.space()
		if s.eat(']') {
			return n, true
		}
		if !first && !(s.eat(',') && s.spaceThen()) {
			return 0, false
		}
		has, ok := s.choice()
		if !ok {
			return 0, false
		}
		if has {
			n++
		}
	}
}

// choice reads one choice object: whether it carries text. A finish
// reason that is set is declined (once per stream: Unmarshal reads it).
func (s *scanner) choice() (hasText bool, ok bool) {
	s.space()
	if !s.eat('{') {
		return false, false
	}
	var text, content, reasoning bool
	seen := 0
	for first := true; ; first = false {
		s.space()
		if s.eat('}') {
			return text || content || reasoning, true
		}
		if !first && !(s.eat(',') && s.spaceThen()) {
			return false, false
		}
		key, ok := s.key()
		if !ok {
			return false, false
		}
		switch string(key) {
		case "text":
			if seen&1 != 0 || !s.stringOrNull(&text) {
				return false, false
			}
			seen |= 1
		case "delta":
			if seen&2 != 0 || !s.delta(&content, &reasoning) {
				return false, false
			}
			seen |= 2
		case "finish_reason":
			var set bool
			if seen&4 != 0 || !s.stringOrNull(&set) || set {
				return false, false
			}
			seen |= 4
		default:
			if !s.skipValue(0) {
				return false, false
			}
		}
	}
}

// delta reads a choice's delta object (or null).
func (s *scanner) delta(content, reasoning *bool) bool {
	s.space()
	if s.literal("null") {
		return true
	}
	if !s.eat('{') {
		return false
	}
	seen := 0
	for first := true; ; first = false {
		s.space()
		if s.eat('}') {
			return true
		}
		if !first && !(s.eat(',') && s.spaceThen()) {
			return false
		}
		key, ok := s.key()
		if !ok {
			return false
		}
		switch string(key) {
		case "content":
			if seen&1 != 0 || !s.stringOrNull(content) {
				return false
			}
			seen |= 1
		case "reasoning_content":
			if seen&2 != 0 || !s.stringOrNull(reasoning) {
				return false
			}
			seen |= 2
		default:
			if !s.skipValue(0) {
				return false
			}
		}
	}
}

// scanner walks JSON bytes; every method returns false on what it does not
// accept, leaving the caller to decline.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// spaceThen skips space and reports true, for use after a comma.
func (s *scanner) spaceThen() bool { s.space(); return true }

func (s *scanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// key reads an object key and its colon, lower-cased. encoding/json
// matches field names without regard to case; a key with an escape or a
// byte outside printable ASCII (where its folding is wider) is declined.
func (s *scanner) key() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	lower := true
	for ; s.i < len(s.b) && s.b[s.i] != '"'; s.i++ {
		c := s.b[s.i]
		if c == '\\' || c < 0x20 || c >= 0x7f {
			return nil, false
		}
		if 'A' <= c && c <= 'Z' {
			lower = false
		}
	}
	if s.i == len(s.b) {
		return nil, false
	}
	k := s.b[start:s.i]
	s.i++
	s.space()
	if !s.eat(':') {
		return nil, false
	}
	s.space()
	if !lower {
		// Rare: a copy, never the chunk's own bytes changed.
		k = bytes.ToLower(k)
	}
	return k, true
}

// stringOrNull reads a string or null; nonEmpty (when not nil) is set to
// whether it was a string of at least one character.
func (s *scanner) stringOrNull(nonEmpty *bool) bool {
	if s.literal("null") {
		if nonEmpty != nil {
			*nonEmpty = false
		}
		return true
	}
	start := s.i
	if !s.skipString() {
		return false
	}
	if nonEmpty != nil {
		*nonEmpty = s.i-start > 2
	}
	return true
}

// skipString skips a JSON string, checking its escapes; control bytes are
// refused as encoding/json refuses them.
func (s *scanner) skipString() bool {
	if !s.eat('"') {
		return false
	}
	for s.i < len(s.b) {
		c := s.b[s.i]
		s.i++
		switch {
		case c == '"':
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if s.i >= len(s.b) {
				return false
			}
			e := s.b[s.i]
			s.i++
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(s.b)-s.i < 4 {
					return false
				}
				for _, h := range s.b[s.i : s.i+4] {
					if !isHex(h) {
						return false
					}
				}
				s.i += 4
			default:
				return false
			}
		}
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// skipValue skips any JSON value, checking it.
func (s *scanner) skipValue(depth int) bool {
	if depth > maxScanDepth {
		return false
	}
	s.space()
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return s.skipString()
	case c == '{':
		s.i++
		for first := true; ; first = false {
			s.space()
			if s.eat('}') {
				return true
			}
			if !first && !(s.eat(',') && s.spaceThen()) {
				return false
			}
			if !s.skipString() {
				return false
			}
			s.space()
			if !s.eat(':') || !s.skipValue(depth+1) {
				return false
			}
		}
	case c == '[':
		s.i++
		for first := true; ; first = false {
			s.space()
			if s.eat(']') {
				return true
			}
			if !first && !s.eat(',') {
				return false
			}
			if !s.skipValue(depth + 1) {
				return false
			}
		}
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	}
	return false
}

// number skips a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	s.eat('-')
	digits := func() int {
		n := 0
		for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.eat('0') {
		// no more integer digits after a leading zero
	} else if digits() == 0 {
		return false
	}
	if s.eat('.') && digits() == 0 {
		return false
	}
	if s.eat('e') || s.eat('E') {
		if !s.eat('+') {
			s.eat('-')
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}
