package sse

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// got is one outcome of Next, as the tests compare them: an event's type,
// data and id, or "too long".
type got struct {
	Type, Data, ID string
	TooLong        bool
}

func (g got) String() string {
	if g.TooLong {
		return fmt.Sprintf("{too long, id %q}", g.ID)
	}
	return fmt.Sprintf("{%q %q id %q}", g.Type, g.Data, g.ID)
}

// readAll reads every event of stream through a Reader reading size bytes
// at a time.
func readAll(t *testing.T, stream string, opts Options, size int) []got {
	t.Helper()
	opts.BufferSize = size
	r := NewReader(strings.NewReader(stream), opts)
	var out []got
	for {
		ev, err := r.Next()
		switch {
		case err == io.EOF:
			return out
		case errors.Is(err, ErrTooLong):
			out = append(out, got{ID: ev.ID, TooLong: true})
		case err != nil:
			t.Fatalf("Next: %v", err)
		default:
			out = append(out, got{ev.Type, string(ev.Data), ev.ID, false})
		}
	}
}

// feedAll reads every event of stream through a Decoder fed one byte at a
// time.
func feedAll(t *testing.T, stream string, opts Options) []got {
	t.Helper()
	d := NewDecoder(opts)
	var out []got
	for i := range len(stream) {
		d.Feed([]byte{stream[i]}, time.Time{})
		for {
			ev, err := d.Next()
			if err == ErrNeedMore {
				break
			}
			if errors.Is(err, ErrTooLong) {
				out = append(out, got{ID: ev.ID, TooLong: true})
				continue
			}
			if err != nil {
				t.Fatalf("Next: %v", err)
			}
			out = append(out, got{ev.Type, string(ev.Data), ev.ID, false})
		}
	}
	return out
}

// The standard's cases ("interpreting an event stream"), each read whole,
// in reads of 1 and 3 bytes, and fed a byte at a time.
func TestEvents(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		opts   Options
		want   []got
	}{
		{"one event", "data: a\n\n", Options{}, []got{{Data: "a"}}},
		{"data lines joined by LF", "data: a\ndata: b\ndata\n\n", Options{}, []got{{Data: "a\nb\n"}}},
		{"a data line alone, empty", "data\n\n", Options{}, []got{{Data: ""}}},
		{"data: with nothing after it", "data:\n\n", Options{}, []got{{Data: ""}}},
		{"one leading space removed, not two", "data:  a \n\ndata:a\n\n", Options{}, []got{{Data: " a "}, {Data: "a"}}},
		{"a colon in the value", "data: a: b:c\n\n", Options{}, []got{{Data: "a: b:c"}}},
		{"event type, then reset", "event: add\ndata: 1\n\ndata: 2\n\n", Options{}, []got{{Type: "add", Data: "1"}, {Data: "2"}}},
		{"no data: not dispatched, type reset", "event: x\n\ndata: 1\n\n", Options{}, []got{{Data: "1"}}},
		{"comments ignored", ": hello\ndata: a\n: there\n\n:\n\n", Options{}, []got{{Data: "a"}}},
		{"other fields ignored", "foo: bar\nDATA: x\ndata : y\ndata: a\n\n", Options{}, []got{{Data: "a"}}},
		{"LF line ends", "data: a\n\ndata: b\n\n", Options{}, []got{{Data: "a"}, {Data: "b"}}},
		{"CRLF line ends", "data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n", Options{}, []got{{Data: "a\nb"}, {Data: "c"}}},
		{"CR line ends", "data: a\rdata: b\r\rdata: c\r\r", Options{}, []got{{Data: "a\nb"}, {Data: "c"}}},
		{"mixed line ends", "data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\n\n", Options{}, []got{{Data: "a\nb\nc"}, {Data: "d"}}},
		{"CR then LF across the blank line", "data: a\r\r\ndata: b\n\n", Options{}, []got{{Data: "a"}, {Data: "b"}}},
		{"a leading BOM dropped", "\xEF\xBB\xBFdata: a\n\n", Options{}, []got{{Data: "a"}}},
		{"only the first BOM", "\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\ndata: b\n\n", Options{}, []got{{Data: "b"}}},
		{"a BOM later is data", "data: \xEF\xBB\xBFa\n\n", Options{}, []got{{Data: "\xEF\xBB\xBFa"}}},
		{"the event the stream ends inside is discarded", "data: a\n\ndata: b\n", Options{}, []got{{Data: "a"}}},
		{"a last line without its end is discarded", "data: a\n\ndata: b", Options{}, []got{{Data: "a"}}},
		{"id kept for later events", "id: 1\ndata: a\n\ndata: b\n\nid: 2\ndata: c\n\n", Options{},
			[]got{{Data: "a", ID: "1"}, {Data: "b", ID: "1"}, {Data: "c", ID: "2"}}},
		{"an empty id resets it", "id: 1\ndata: a\n\nid\ndata: b\n\n", Options{}, []got{{Data: "a", ID: "1"}, {Data: "b"}}},
		{"an id with NUL ignored", "id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n", Options{}, []got{{Data: "a", ID: "1"}, {Data: "b", ID: "1"}}},
		{"an id alone sets it for the next", "id: 7\n\ndata: a\n\n", Options{}, []got{{Data: "a", ID: "7"}}},
		{"the last event ID to start from", "data: a\n\nid: 9\ndata: b\n\n", Options{LastEventID: "8"}, []got{{Data: "a", ID: "8"}, {Data: "b", ID: "9"}}},
		{"over the bound: skipped, then the next", "id: 1\ndata: 12345\n\ndata: 1234\n\n", Options{MaxBytes: 4},
			[]got{{ID: "1", TooLong: true}, {Data: "1234", ID: "1"}}},
		{"over the bound joined", "data: 12\ndata: 34\n\ndata: 1\ndata: 2\n\n", Options{MaxBytes: 4}, []got{{TooLong: true}, {Data: "1\n2"}}},
		{"a field over the bound", "event: 12345\ndata: 1\n\nid: 12345\ndata: 2\n\n", Options{MaxBytes: 4}, []got{{TooLong: true}, {TooLong: true}}},
		{"comments and other fields of any length", ": " + strings.Repeat("c", 100) + "\nx" + strings.Repeat("y", 100) + "\ndata: 1\n\n",
			Options{MaxBytes: 4}, []got{{Data: "1"}}},
		{"a long line with no colon is no data field", "data" + strings.Repeat("a", 100) + "\ndata: 1\n\n", Options{MaxBytes: 4}, []got{{Data: "1"}}},
		{"a long line after a BOM", "\xEF\xBB\xBFdata: " + strings.Repeat("a", 100) + "\n\ndata: 1\n\n", Options{MaxBytes: 4},
			[]got{{TooLong: true}, {Data: "1"}}},
		{"an event over the bound the stream ends inside", "data: 1\n\ndata: 12345\n", Options{MaxBytes: 4}, []got{{Data: "1"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, size := range []int{1, 3, 64 << 10} {
				if g := readAll(t, tc.stream, tc.opts, size); !slices.Equal(g, tc.want) {
					t.Errorf("read %d bytes at a time: %v, want %v", size, g, tc.want)
				}
			}
			if g := feedAll(t, tc.stream, tc.opts); !slices.Equal(g, tc.want) {
				t.Errorf("fed a byte at a time: %v, want %v", g, tc.want)
			}
		})
	}
}

// Retry takes a field of ASCII digits only, at once, whether or not its
// event is dispatched; LastEventID is the id as of the last blank line.
func TestRetryAndLastEventID(t *testing.T) {
	tests := []struct {
		stream string
		retry  time.Duration
		set    bool
		lastID string
	}{
		{"retry: 2500\n", 2500 * time.Millisecond, true, ""},
		{"retry: 2500\nretry: 0\n\n", 0, true, ""},
		{"retry: 100\nretry: +5\nretry: 5 \nretry: x\nretry\n\n", 100 * time.Millisecond, true, ""},
		{"retry: 99999999999999999999\n\n", 0, false, ""},
		{"id: 1\n\nid: 2\n", 0, false, "1"},
		{"id: 1\ndata: a\n\n", 0, false, "1"},
	}
	for _, tc := range tests {
		r := NewReader(strings.NewReader(tc.stream), Options{})
		for {
			if _, err := r.Next(); err == io.EOF {
				break
			}
		}
		if d, ok := r.Retry(); d != tc.retry || ok != tc.set {
			t.Errorf("%q: Retry() = %v, %v; want %v, %v", tc.stream, d, ok, tc.retry, tc.set)
		}
		if id := r.LastEventID(); id != tc.lastID {
			t.Errorf("%q: LastEventID() = %q, want %q", tc.stream, id, tc.lastID)
		}
	}
}

// NextField gives the fields the standard acts on as their lines are read,
// with a last line the stream ends cleanly without its end.
func TestFields(t *testing.T) {
	stream := "\xEF\xBB\xBF: c\r\nevent: e\rdata:x\r\nid: 1\n\nfoo: bar\nretry: 7\ndata: " + strings.Repeat("y", 9) + "\ndata: [DONE]"
	want := []string{"event=e", "data=x", "id=1", "retry=7", "data too long", "data=[DONE]"}
	for _, size := range []int{1, 2, 64 << 10} {
		r := NewReader(strings.NewReader(stream), Options{MaxBytes: 8, BufferSize: size})
		var out []string
		for {
			f, err := r.NextField()
			if err == io.EOF {
				break
			}
			switch {
			case errors.Is(err, ErrTooLong):
				out = append(out, f.Name+" too long")
			case err != nil:
				t.Fatal(err)
			default:
				out = append(out, f.Name+"="+string(f.Value))
			}
		}
		if !slices.Equal(out, want) {
			t.Errorf("read %d bytes at a time: %q, want %q", size, out, want)
		}
		if d, _ := r.Retry(); d != 7*time.Millisecond || r.LastEventID() != "1" {
			t.Errorf("retry %v, last id %q", d, r.LastEventID())
		}
	}
}

// A stream that breaks off: the last line without its end is not a field,
// and the error is the source's.
func TestFieldsBrokenStream(t *testing.T) {
	broken := errors.New("connection reset")
	r := NewReader(io.MultiReader(strings.NewReader("data: a\ndata: b"), errReader{broken}), Options{})
	if f, err := r.NextField(); err != nil || string(f.Value) != "a" {
		t.Fatalf("first field %q, %v", f.Value, err)
	}
	if _, err := r.NextField(); err != broken {
		t.Fatalf("err %v, want %v", err, broken)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// pieces returns one piece per Read, moving the clock to its time first.
type pieces struct {
	parts []string
	at    []time.Time
	clk   *clock.Fake
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.parts) == 0 {
		return 0, io.EOF
	}
	p.clk.Advance(p.at[0].Sub(p.clk.Now()))
	n := copy(b, p.parts[0])
	p.parts, p.at = p.parts[1:], p.at[1:]
	return n, nil
}

// An event is stamped when its first line was read, not its blank line,
// and a comment before it does not count; a field when its line was read.
func TestArrivalTime(t *testing.T) {
	t0 := time.Unix(1_764_690_000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	clk := clock.NewFake(t0)
	src := &pieces{
		parts: []string{": keep-alive\n", "\nevent: x\nda", "ta: a\n", "\ndata: b\n\n", "data: c\n\n"},
		at:    []time.Time{ms(1), ms(2), ms(3), ms(4), ms(5)},
		clk:   clk,
	}
	r := NewReader(src, Options{Clock: clk})
	var at []time.Duration
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		at = append(at, ev.At.Sub(t0))
	}
	if want := []time.Duration{2 * time.Millisecond, 4 * time.Millisecond, 5 * time.Millisecond}; !slices.Equal(at, want) {
		t.Errorf("events at %v, want %v", at, want)
	}

	// Fed: each field at the Feed that completed its line.
	d := NewDecoder(Options{})
	var fields []time.Duration
	for i, p := range []string{"data: a", "\ndata: b\nev", "ent: c\n"} {
		d.Feed([]byte(p), ms(10*i))
		for {
			f, err := d.NextField()
			if err == ErrNeedMore {
				break
			}
			fields = append(fields, f.At.Sub(t0))
		}
	}
	if want := []time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond}; !slices.Equal(fields, want) {
		t.Errorf("fields at %v, want %v", fields, want)
	}
}

// Whatever the stream's length, a reader holds about its bound of it: a
// line that never ends, and data lines that never end their event.
func TestBounded(t *testing.T) {
	const max = 1 << 10
	for _, tc := range []struct {
		name   string
		stream io.Reader
	}{
		{"an endless line", io.MultiReader(strings.NewReader("data: "), endless('x'))},
		{"endless data lines", endlessLines("data: " + strings.Repeat("y", 100) + "\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(io.LimitReader(tc.stream, 16<<20), Options{MaxBytes: max, BufferSize: 4 << 10})
			if _, err := r.Next(); err != io.EOF {
				t.Fatalf("Next: %v", err)
			}
			if c := cap(r.d.carry) + cap(r.d.data); c > 4*(max+headLen) {
				t.Errorf("holds %d bytes for a bound of %d", c, max)
			}
		})
	}
}

type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}

// endlessLines repeats line for ever.
func endlessLines(line string) io.Reader {
	return readerFunc(func(p []byte) (int, error) {
		n := 0
		for n < len(p) {
			n += copy(p[n:], line)
		}
		return n, nil
	})
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// Reading events from bytes in the decoder's buffer takes no allocation,
// and an event of one data line is not copied.
func TestNoAllocations(t *testing.T) {
	stream := []byte("event: tok\nid: 1\ndata: {\"choices\":[{\"text\":\"x\"}]}\n\n: ping\n\n")
	d := NewDecoder(Options{})
	next := func() {
		d.Feed(stream, time.Time{})
		ev, err := d.Next()
		if err != nil || len(ev.Data) == 0 || &ev.Data[0] != &stream[23] {
			t.Fatalf("event %q, %v (copied: %v)", ev.Data, err, err == nil && &ev.Data[0] != &stream[23])
		}
		if _, err := d.Next(); err != ErrNeedMore {
			t.Fatalf("then %v", err)
		}
	}
	next()
	if n := testing.AllocsPerRun(100, next); n != 0 {
		t.Errorf("%v allocations per event", n)
	}
	fields := func() {
		d.Feed(stream, time.Time{})
		for {
			if _, err := d.NextField(); err == ErrNeedMore {
				return
			}
		}
	}
	if n := testing.AllocsPerRun(100, fields); n != 0 {
		t.Errorf("%v allocations per event's fields", n)
	}
}

// Data that lies in the bytes fed is copied before they are replaced.
func TestAliasedDataCopied(t *testing.T) {
	d := NewDecoder(Options{})
	buf := []byte("data: abc\n")
	d.Feed(buf, time.Time{})
	if _, err := d.Next(); err != ErrNeedMore {
		t.Fatal(err)
	}
	copy(buf, "XXXXXXXXX\n")
	d.Feed([]byte("\n"), time.Time{})
	if ev, err := d.Next(); err != nil || string(ev.Data) != "abc" {
		t.Errorf("event %q, %v", ev.Data, err)
	}
}

func TestFeedBeforeRead(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	d := NewDecoder(Options{})
	d.Feed([]byte("data: a\n\ndata: b\n\n"), time.Time{})
	d.Next()
	d.Feed([]byte("x"), time.Time{})
}

// The relay's cases: where the last blank line of a read ends.
func TestEventEnd(t *testing.T) {
	none := [2]byte{}
	tests := []struct {
		prev [2]byte
		in   string
		from int
		want int
	}{
		{none, "data: a\n\n", 0, 9},
		{none, "data: a\n\ndata: b", 0, 9},
		{none, "data: a\n\ndata: b\n\nda", 0, 18},
		{none, "data: a\n", 0, 0},
		{none, "data: a\r\n\r\n", 0, 11},
		{none, "data: a\r\rx", 0, 9},
		{none, "data: a\n\n", 8, 9}, // the blank line begins before from
		{none, "data: a\r\n\r\n", 10, 11},
		{none, "\n\nxx", 2, 0}, // ending before from: known to end none
		{[2]byte{'a', '\n'}, "\ndata: b", 0, 1},
		{[2]byte{'\n', '\r'}, "\ndata: b", 0, 1},
		{[2]byte{'a', '\r'}, "\rx", 0, 1},
		{[2]byte{'a', 'b'}, "\nx", 0, 0},
		{none, "", 0, 0},
		{none, "\n", 0, 0},
		// CR after a line end: cut once the next byte says it is no CRLF.
		{none, "data: a\n\r", 0, 0},
		{none, "data: a\n\rdata: b", 0, 9},
		{none, "data: a\r\n\r", 0, 0},
		{none, "data: a\r\n\rx", 0, 10},
		{none, "data: a\n\rx", 9, 9}, // the CR before from, its next byte now known
		{none, "data: a\r\r\n", 0, 10},
		{none, "data: a\n\r\n", 0, 10},
		{[2]byte{'\n', '\r'}, "x", 0, 0}, // the CR's event went out with prev
	}
	for _, tc := range tests {
		if got := EventEnd(tc.prev, []byte(tc.in), tc.from); got != tc.want {
			t.Errorf("EventEnd(%q, %q, %d) = %d, want %d", tc.prev, tc.in, tc.from, got, tc.want)
		}
	}
}

// The standard's own examples (HTML, "Server-sent events", "Parsing an
// event stream") read as it says they do.
func TestStandardExamples(t *testing.T) {
	// "The following stream contains four blocks."
	stream := ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n"
	want := []got{{Data: "first event", ID: "1"}, {Data: "second event"}, {Data: " third event"}}
	if g := readAll(t, stream, Options{}, 64<<10); !slices.Equal(g, want) {
		t.Errorf("%v, want %v", g, want)
	}
	// "The following stream fires two events": an empty one and a blank.
	stream = "data\n\ndata\ndata\n\ndata:"
	want = []got{{Data: ""}, {Data: "\n"}}
	if g := readAll(t, stream, Options{}, 64<<10); !slices.Equal(g, want) {
		t.Errorf("%v, want %v", g, want)
	}
	// "The following stream fires two identical events".
	stream = "data:test\n\ndata: test\n\n"
	want = []got{{Data: "test"}, {Data: "test"}}
	if g := readAll(t, stream, Options{}, 64<<10); !slices.Equal(g, want) {
		t.Errorf("%v, want %v", g, want)
	}
}
