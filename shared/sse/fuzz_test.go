package sse

import (
	"bytes"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzReader: whatever the stream, the Reader, whatever its buffer, and a
// Decoder, however the bytes are cut, read the events and fields that the
// standard's algorithm (oracle, below: the whole stream at once, line by
// line) reads, with the same bound; and EventEnd cuts at the blank lines
// that algorithm finds, looking from any point and on any prefix.
func FuzzReader(f *testing.F) {
	for _, seed := range []string{
		"data: a\n\ndata: b\r\n\r\ndata: c\r\r",
		"\xEF\xBB\xBFid: 1\nevent: e\ndata\ndata: x\n\n: c\n\nretry: 10\n\nid\x00\ndata:  y\r\n",
		"data: 123456789\n\ndata: 1\ndata: 2\n\n",
		"\n\r\r\n\r\n\n\r",
		"data: a\r\r\ndata: b\n\r\ndata: c",
	} {
		f.Add([]byte(seed), uint16(len(seed)/2), uint8(8))
	}
	f.Fuzz(fuzzBody)
}

func fuzzBody(t *testing.T, stream []byte, split uint16, bound uint8) {
	{
		if len(stream) > 1<<10 {
			stream = stream[:1<<10] // checkEventEnd's cost grows as its square
		}
		max := int(bound) + 1
		want := oracle(stream, max)
		k := int(split) % (len(stream) + 1)

		size := int(split)%17 + 1
		r := NewReader(bytes.NewReader(stream), Options{MaxBytes: max, BufferSize: size})
		if evs := readEvents(t, r.Next); !slices.Equal(evs, want.events) {
			t.Fatalf("Reader (%d bytes a read): %v\nwant %v", size, evs, want.events)
		}
		if r.LastEventID() != want.lastID {
			t.Fatalf("last event ID %q, want %q", r.LastEventID(), want.lastID)
		}
		if d, ok := r.Retry(); d != want.retry || ok != want.retrySet {
			t.Fatalf("retry %v %v, want %v %v", d, ok, want.retry, want.retrySet)
		}
		r = NewReader(bytes.NewReader(stream), Options{MaxBytes: max, BufferSize: size})
		wantFields := want.fields
		if want.tail != "" {
			wantFields = append(slices.Clip(wantFields), want.tail)
		}
		if fs := readFields(t, r.NextField); !slices.Equal(fs, wantFields) {
			t.Fatalf("Reader's fields: %q\nwant %q", fs, wantFields)
		}

		for _, cuts := range [][]int{{k}, evenCuts(len(stream), size)} {
			d := NewDecoder(Options{MaxBytes: max})
			var evs []got
			fd := NewDecoder(Options{MaxBytes: max})
			var fs []string
			from := 0
			for _, to := range append(cuts, len(stream)) {
				piece := append([]byte(nil), stream[from:to]...) // its own array, as a caller's may be
				d.Feed(piece, time.Time{})
				evs = append(evs, readEvents(t, d.Next)...)
				fd.Feed(piece, time.Time{})
				fs = append(fs, readFields(t, fd.NextField)...)
				from = to
			}
			if !slices.Equal(evs, want.events) {
				t.Fatalf("Decoder cut at %v: %v\nwant %v", cuts, evs, want.events)
			}
			if !slices.Equal(fs, want.fields) {
				t.Fatalf("Decoder's fields cut at %v: %q\nwant %q", cuts, fs, want.fields)
			}
		}

		checkEventEnd(t, stream, want.ends, k)
	}
}

// evenCuts cuts n bytes every size.
func evenCuts(n, size int) []int {
	var cuts []int
	for i := size; i < n; i += size {
		cuts = append(cuts, i)
	}
	return cuts
}

// readEvents calls next until io.EOF or ErrNeedMore.
func readEvents(t *testing.T, next func() (Event, error)) []got {
	t.Helper()
	var out []got
	for {
		ev, err := next()
		switch {
		case err == io.EOF || err == ErrNeedMore:
			return out
		case errors.Is(err, ErrTooLong):
			out = append(out, got{ID: ev.ID, TooLong: true})
		case err != nil:
			t.Fatal(err)
		default:
			out = append(out, got{ev.Type, string(ev.Data), ev.ID, false})
		}
	}
}

func readFields(t *testing.T, next func() (Field, error)) []string {
	t.Helper()
	var out []string
	for {
		f, err := next()
		switch {
		case err == io.EOF || err == ErrNeedMore:
			return out
		case errors.Is(err, ErrTooLong):
			out = append(out, f.Name+" too long")
		case err != nil:
			t.Fatal(err)
		default:
			out = append(out, f.Name+"="+string(f.Value))
		}
	}
}

// checkEventEnd holds EventEnd to the blank lines' ends (after their whole
// line end) on every prefix of stream, as a relay's reads would end: it
// may cut a CR CR before the LF that makes the second a CRLF, and it waits
// for the byte after a CR that follows an LF. Looking from k, or from the
// stream's start with the two bytes before k, it finds the same.
func checkEventEnd(t *testing.T, stream []byte, ends []int, k int) {
	t.Helper()
	last := func(n int) int { // the last end at or before n
		e := 0
		for _, x := range ends {
			if x <= n {
				e = x
			}
		}
		return e
	}
	for n := 1; n <= len(stream); n++ {
		// A prefix that ends in neither of the last two bytes of a line
		// end cuts where the one before it did.
		if n != k && n != len(stream) && !lineEnd(stream[n-1]) && (n < 2 || !lineEnd(stream[n-2])) {
			continue
		}
		b := stream[:n]
		e := EventEnd([2]byte{}, b, 0)
		want := last(n)
		switch {
		case e == want:
		case e == n && b[n-1] == '\r' && n >= 2 && b[n-2] == '\r' && n < len(stream) && stream[n] == '\n' && slices.Contains(ends, n+1):
			// CR CR, then the LF: cut before it.
		case want == n && b[n-1] == '\r' && n >= 2 && b[n-2] == '\n' && e == last(n-1):
			// LF CR: waits for the next byte.
		default:
			t.Fatalf("EventEnd(%q) = %d, want %d (blank lines end at %v)", b, e, want, ends)
		}
		if k >= 2 && k <= n {
			prev := [2]byte{stream[k-2], stream[k-1]}
			got := EventEnd(prev, b[k:], 0)
			if (e > k && got != e-k) || (e <= k && got != 0) {
				t.Fatalf("EventEnd(%q, %q) = %d; on the whole prefix %d", prev, b[k:], got, e)
			}
		}
		if k <= n && EventEnd([2]byte{}, b[:k], 0) == 0 {
			if got := EventEnd([2]byte{}, b, k); got != e {
				t.Fatalf("EventEnd(%q) from %d = %d, from 0 %d", b, k, got, e)
			}
		}
	}
}

// expected is what the standard's algorithm reads from a whole stream.
type expected struct {
	events   []got
	fields   []string // "name=value", or "name too long"
	tail     string   // the field of a last line without its end, as fields has it
	ends     []int    // where each blank line after the first line ends
	lastID   string
	retry    time.Duration
	retrySet bool
}

// oracle is the standard's algorithm written as plainly as it reads, on
// the whole stream, with the bound: a field's value over max, or data
// joined over it, makes its event ErrTooLong; comments and other fields
// are ignored at any length.
func oracle(s []byte, max int) expected {
	var x expected
	type line struct {
		text []byte
		end  int // after its line end, in the stream with its BOM
	}
	var lines []line
	start := 0
	if bytes.HasPrefix(s, bom) {
		start = len(bom)
	}
	for i := start; i < len(s); {
		switch s[i] {
		case '\n':
			lines = append(lines, line{s[start:i], i + 1})
			i++
			start = i
		case '\r':
			end := i + 1
			if end < len(s) && s[end] == '\n' {
				end++
			}
			lines = append(lines, line{s[start:i], end})
			i, start = end, end
		default:
			i++
		}
	}

	var (
		data          []byte
		hasData, over bool
		typ           []byte
		idBuf         string
	)
	field := func(l []byte) (name string, value []byte, ok bool) {
		if len(l) == 0 || l[0] == ':' {
			return "", nil, false
		}
		n, v, colon := bytes.Cut(l, []byte(":"))
		if colon && len(v) > 0 && v[0] == ' ' {
			v = v[1:]
		}
		switch string(n) {
		case "data", "event", "id", "retry":
			return string(n), v, true
		}
		return "", nil, false
	}
	for i, l := range lines {
		if len(l.text) == 0 {
			if i > 0 {
				x.ends = append(x.ends, l.end)
			}
			x.lastID = idBuf
			switch {
			case over:
				x.events = append(x.events, got{ID: x.lastID, TooLong: true})
			case hasData:
				x.events = append(x.events, got{string(typ), string(data), x.lastID, false})
			}
			data, hasData, over, typ = nil, false, false, nil
			continue
		}
		name, value, ok := field(l.text)
		if !ok {
			continue
		}
		if len(value) > max {
			over = true
			x.fields = append(x.fields, name+" too long")
			continue
		}
		x.fields = append(x.fields, name+"="+string(value))
		switch name {
		case "data":
			switch {
			case over:
			case !hasData:
				data, hasData = value, true
			case len(data)+1+len(value) > max:
				over = true
			default:
				data = append(append(slices.Clip(data), '\n'), value...)
			}
		case "event":
			typ = value
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				idBuf = string(value)
			}
		case "retry":
			ms, err := strconv.ParseInt(string(value), 10, 64)
			if err == nil && strings.Trim(string(value), "0123456789") == "" && ms <= math.MaxInt64/int64(time.Millisecond) {
				x.retry, x.retrySet = time.Duration(ms)*time.Millisecond, true
			}
		}
	}
	if name, value, ok := field(s[start:]); ok {
		if len(value) > max {
			x.tail = name + " too long"
		} else {
			x.tail = name + "=" + string(value)
		}
	}
	return x
}
