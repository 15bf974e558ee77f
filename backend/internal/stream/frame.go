package stream

import (
	"bytes"
	"strconv"
	"time"
)

// frame is one serialised snapshot event. It is immutable once built and
// shared by every client: writing it copies nothing.
type frame struct {
	version uint64
	// data is "event: snapshot\ndata: …\nid: …\n\n": the original's
	// frame, which starts with its event line, and the version after.
	data []byte
	// data[atFrom:atTo] are the digits of the snapshot's leading "at"
	// member, so an opening frame can carry its send time without a new
	// encoding; atTo is 0 when the JSON does not start with one.
	atFrom, atTo int
}

// leadingAt is how a snapshot's JSON starts when "at" is its first member.
var leadingAt = []byte(`{"at":`)

func newFrame(version uint64, data []byte) *frame {
	buf := make([]byte, 0, len(data)+48)
	buf = append(buf, "event: snapshot\ndata: "...)
	start := len(buf)
	buf = append(buf, data...) // compact JSON has no newlines
	buf = append(buf, "\nid: "...)
	buf = strconv.AppendUint(buf, version, 10)
	buf = append(buf, "\n\n"...)
	f := &frame{version: version, data: buf}
	if bytes.HasPrefix(data, leadingAt) {
		from := start + len(leadingAt)
		to := from
		if to < len(buf) && buf[to] == '-' {
			to++
		}
		for to < len(buf) && buf[to] >= '0' && buf[to] <= '9' {
			to++
		}
		if to > from {
			f.atFrom, f.atTo = from, to
		}
	}
	return f
}

// stampable reports whether the frame's "at" can be rewritten in place.
func (f *frame) stampable() bool { return f.atTo > 0 }

// stamped returns the frame's parts with "at" replaced by now, in dst's
// storage. The frame itself is untouched.
func (f *frame) stamped(dst [][]byte, digits []byte, now time.Time) (parts [][]byte, size int) {
	digits = strconv.AppendInt(digits[:0], now.UnixMilli(), 10)
	parts = append(dst[:0], f.data[:f.atFrom], digits, f.data[f.atTo:])
	return parts, len(f.data) - (f.atTo - f.atFrom) + len(digits)
}

// chunkSize appends the HTTP/1.1 chunk-size line for n bytes.
func chunkSize(dst []byte, n int) []byte {
	dst = strconv.AppendUint(dst, uint64(n), 16)
	return append(dst, "\r\n"...)
}
