// Package sse reads server-sent events as the WHATWG HTML standard's
// "interpreting an event stream" does, for every client in the workspace:
// the follower of a host's stream, the proxy's meter and relay, the load
// generator and the scripts. They had each parsed streams their own way,
// and disagreed on CR line ends, multi-line data and the space after the
// colon.
//
// Next gives events as an EventSource dispatches them, at their blank
// line. NextField gives each field line as it is read: for a client that
// times chunks (the meter, the load generator), which acts on a data line
// when it arrives and takes one the stream ends without its blank line.
// Both hold about an event's bound of it in memory at most, and stamp
// what they read on an injected clock. EventEnd finds where events end in bytes
// passing through, for a relay that flushes whole events.
//
// Bytes are passed on as they come: invalid UTF-8 is not replaced.
package sse

import (
	"bytes"
	"errors"
	"io"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// ErrTooLong is an event (or, from NextField, a field) over the bound. The
// reader has passed over it and goes on with the next.
var ErrTooLong = errors.New("sse: event over the size bound")

// ErrNeedMore says a Decoder has read every byte fed to it.
var ErrNeedMore = errors.New("sse: more bytes needed")

// DefaultMaxBytes is the bound of an event when Options leave it 0.
const DefaultMaxBytes = 1 << 20

// Options configure a Reader or a Decoder. The zero value is the defaults.
type Options struct {
	// MaxBytes bounds an event's data (its data lines' values joined by
	// newlines) and any one field's value (DefaultMaxBytes when 0). Past
	// it no more of the event is held, and it is reported as ErrTooLong.
	MaxBytes int
	// Clock stamps what a Reader reads (clock.Real when nil). A Decoder
	// takes the time given with each Feed instead.
	Clock clock.Clock
	// BufferSize is how many bytes a Reader reads at once (64 KiB when 0).
	BufferSize int
	// LastEventID is where the last event ID starts: the one sent as
	// Last-Event-ID when reconnecting, as an EventSource keeps it.
	LastEventID string
}

// Event is one dispatched event.
type Event struct {
	// Type is the event field's value, "" without one (which an
	// EventSource dispatches as "message").
	Type string
	// Data is the data lines' values joined by "\n"; valid until the next
	// call.
	Data []byte
	// ID is the last event ID as of this event: set by its id field or an
	// earlier event's.
	ID string
	// At is when the event's first line, comments aside, was read: by
	// the Reader's clock as it took the line, or the time fed with the
	// bytes that completed the line.
	At time.Time
}

// Field is one field line that the standard acts on: event, data, id or
// retry.
type Field struct {
	Name  string    // "event", "data", "id" or "retry"
	Value []byte    // after the colon and one space; valid until the next call
	At    time.Time // when its line was read, as Event.At
}

// headLen is what a line over the bound keeps of its start: enough to
// tell a comment from a field, and which field it is, past a BOM.
const headLen = 16

var bom = []byte("\xEF\xBB\xBF")

// Decoder reads events from bytes pushed to it (Feed), for a caller that
// has them from elsewhere, such as the proxy's meter. Read it with Next or
// with NextField, not both: NextField does not gather events. The zero
// value is ready, with the default options.
type Decoder struct {
	max   int
	clock clock.Clock // a Reader's: lines are stamped when read

	p   []byte    // fed, not read yet
	at  time.Time // when p came
	eof bool      // a Reader's source ended: a partial line is a last line

	// The line being read, when it began in bytes fed before p. Once
	// longer than the bound it is only its head, and long is set.
	carry   []byte
	carried bool // the line returned last was carry: empty it first
	long    bool
	skipLF  bool // the last line ended with CR: an LF next is its end too
	started bool // the stream's first line (and a BOM) is behind

	// The event being read.
	began    bool // a line of it was read, at evAt
	evAt     time.Time
	over     bool // over the bound: it will be ErrTooLong
	hasData  bool
	data     []byte // its data, unless aliased
	alias    []byte // its data when one line in p: not copied
	aliased  bool
	typ      []byte
	typeName string // the last Type returned, kept to not allocate again
	idBuf    string // the last event ID buffer
	lastID   string // the last event ID, as of the last dispatch
	retry    time.Duration
	retrySet bool
}

// NewDecoder returns a decoder with opts (Clock and BufferSize aside).
func NewDecoder(opts Options) *Decoder {
	d := &Decoder{}
	d.init(opts)
	return d
}

func (d *Decoder) init(opts Options) {
	d.max = opts.MaxBytes
	if d.max <= 0 {
		d.max = DefaultMaxBytes
	}
	d.idBuf, d.lastID = opts.LastEventID, opts.LastEventID
}

// Feed gives the decoder the next bytes of the stream, which came at at.
// Read them with Next or NextField until ErrNeedMore before feeding more,
// and leave p unchanged until then: lines whole in p are not copied.
func (d *Decoder) Feed(p []byte, at time.Time) {
	if len(d.p) > 0 {
		panic("sse: Feed before the bytes fed were read")
	}
	if d.max == 0 {
		d.init(Options{})
	}
	d.p, d.at = p, at
}

// LastEventID is the last event ID as of the last dispatch (a blank line),
// as an EventSource would send it on reconnecting.
func (d *Decoder) LastEventID() string { return d.lastID }

// Retry is the reconnection time of the last valid retry field, if any.
func (d *Decoder) Retry() (time.Duration, bool) { return d.retry, d.retrySet }

// Next returns the next event, ErrTooLong for one over the bound (with
// its ID and At), or ErrNeedMore once the bytes fed are read. An event
// without a data field is not dispatched, as the standard says.
func (d *Decoder) Next() (Event, error) {
	for {
		line, long, ok := d.nextLine()
		if !ok {
			return Event{}, ErrNeedMore
		}
		if len(line) == 0 && !long {
			ev, dispatched, err := d.dispatch()
			if dispatched {
				return ev, err
			}
			continue
		}
		if !d.began && line[0] != ':' {
			d.began, d.evAt = true, d.now()
		}
		name, value, tooLong, known := d.parse(line, long)
		if !known {
			continue
		}
		if tooLong {
			d.over = true
			continue
		}
		d.take(name, value, !d.carried)
	}
}

// NextField returns the next field line, ErrTooLong (with the field's
// name) for one whose value is over the bound, or ErrNeedMore once the
// bytes fed are read. Comments, blank lines and fields the standard
// ignores are skipped; data is not joined into events. The last event ID
// and Retry are kept as Next keeps them.
func (d *Decoder) NextField() (Field, error) {
	for {
		line, long, ok := d.nextLine()
		if !ok {
			return Field{}, ErrNeedMore
		}
		if len(line) == 0 && !long {
			if d.lastID != d.idBuf {
				d.lastID = d.idBuf
			}
			continue
		}
		name, value, tooLong, known := d.parse(line, long)
		if !known {
			continue
		}
		at := d.now()
		if tooLong {
			return Field{Name: name, At: at}, ErrTooLong
		}
		switch name {
		case "id", "retry":
			d.take(name, value, false)
		}
		return Field{Name: name, Value: value, At: at}, nil
	}
}

func (d *Decoder) now() time.Time {
	if d.clock != nil {
		return d.clock.Now()
	}
	return d.at
}

// nextLine returns the next whole line without its end, or ok false when
// the bytes fed hold no more. A line over the bound comes as its head,
// with long set.
func (d *Decoder) nextLine() (line []byte, long, ok bool) {
	if d.carried {
		d.carry, d.carried = d.carry[:0], false
	}
	for len(d.p) > 0 {
		if d.skipLF {
			d.skipLF = false
			if d.p[0] == '\n' {
				d.p = d.p[1:]
				continue
			}
		}
		// A line ends at LF, CR or CRLF: the first LF, unless a CR
		// comes before it.
		i := bytes.IndexByte(d.p, '\n')
		seg := d.p
		if i >= 0 {
			seg = d.p[:i]
		}
		if len(seg) > 0 {
			if j := bytes.IndexByte(seg, '\r'); j >= 0 {
				i = j
			}
		}
		if i < 0 {
			d.hold(d.p)
			d.p = d.p[len(d.p):]
			break
		}
		line = d.p[:i]
		end := i + 1
		if d.p[i] == '\r' {
			switch {
			case end == len(d.p):
				d.skipLF = true // the LF may come in the next bytes
			case d.p[end] == '\n':
				end++
			}
		}
		d.p = d.p[end:]
		if len(d.carry) > 0 || d.long {
			d.hold(line)
			line, long, d.carried, d.long = d.carry, d.long, true, false
		}
		if !d.started {
			line = d.first(line)
		}
		return line, long, true
	}
	if d.eof && (len(d.carry) > 0 || d.long) {
		line, long, d.carried, d.long = d.carry, d.long, true, false
		return d.first(line), long, true
	}
	// The next bytes fed replace p: data that is a slice of it is copied.
	if d.aliased {
		d.data, d.alias, d.aliased = append(d.data[:0], d.alias...), nil, false
	}
	return nil, false, false
}

// first drops a BOM from the stream's first line.
func (d *Decoder) first(line []byte) []byte {
	if !d.started {
		d.started = true
		return bytes.TrimPrefix(line, bom)
	}
	return line
}

// hold adds b to the line being read, or once the line is longer than any
// field within the bound could make it, keeps only its head.
func (d *Decoder) hold(b []byte) {
	if d.long {
		return
	}
	if len(d.carry)+len(b) <= d.max+headLen {
		d.carry = append(d.carry, b...)
		return
	}
	d.long = true
	if len(d.carry) >= headLen {
		d.carry = d.carry[:headLen]
		return
	}
	d.carry = append(d.carry, b[:headLen-len(d.carry)]...)
}

// parse splits a line (not blank) into a field the standard acts on and
// its value; known is false for a comment or another field.
func (d *Decoder) parse(line []byte, long bool) (name string, value []byte, tooLong, known bool) {
	if line[0] == ':' {
		return "", nil, false, false
	}
	field := line
	if len(line) >= 5 && line[4] == ':' && string(line[:4]) == "data" {
		field, value = line[:4], line[5:] // most lines: no search for the colon
	} else if i := bytes.IndexByte(line, ':'); i >= 0 {
		field, value = line[:i], line[i+1:]
	}
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	switch string(field) {
	case "data":
		name = "data"
	case "event":
		name = "event"
	case "id":
		name = "id"
	case "retry":
		name = "retry"
	default:
		return "", nil, false, false
	}
	return name, value, long || len(value) > d.max, true
}

// take acts on one field of the event being read; inP says value lies in
// the bytes fed, where it may stay until they are replaced.
func (d *Decoder) take(name string, value []byte, inP bool) {
	switch name {
	case "data":
		if d.over {
			return
		}
		if !d.hasData {
			d.hasData = true
			if inP {
				d.alias, d.aliased = value, true
			} else {
				d.data = append(d.data[:0], value...)
			}
			return
		}
		if d.dataLen()+1+len(value) > d.max {
			d.over = true
			return
		}
		if d.aliased {
			d.data, d.alias, d.aliased = append(d.data[:0], d.alias...), nil, false
		}
		d.data = append(append(d.data, '\n'), value...)
	case "event":
		d.typ = append(d.typ[:0], value...)
	case "id":
		if bytes.IndexByte(value, 0) < 0 && string(value) != d.idBuf {
			d.idBuf = string(value)
		}
	case "retry":
		if ms, ok := digits(value); ok {
			d.retry, d.retrySet = time.Duration(ms)*time.Millisecond, true
		}
	}
}

func (d *Decoder) dataLen() int {
	if d.aliased {
		return len(d.alias)
	}
	return len(d.data)
}

// digits is value as a count of milliseconds, when it is only ASCII digits
// and fits a time.Duration.
func digits(value []byte) (int64, bool) {
	if len(value) == 0 {
		return 0, false
	}
	const limit = int64(1<<63-1) / int64(time.Millisecond)
	var n int64
	for _, c := range value {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (limit-int64(c-'0'))/10 {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// dispatch ends the event at a blank line; dispatched is false when there
// is nothing to return (no data field).
func (d *Decoder) dispatch() (ev Event, dispatched bool, err error) {
	d.lastID = d.idBuf
	at := d.evAt
	d.began = false
	over, hasData := d.over, d.hasData
	d.over, d.hasData = false, false
	data := d.data
	if d.aliased {
		data = d.alias
	}
	d.data, d.alias, d.aliased = d.data[:0], nil, false
	typ := d.typ
	d.typ = d.typ[:0]
	if !over && !hasData {
		return Event{}, false, nil
	}
	if string(typ) != d.typeName {
		d.typeName = string(typ)
	}
	if over {
		return Event{Type: d.typeName, ID: d.lastID, At: at}, true, ErrTooLong
	}
	return Event{Type: d.typeName, Data: data, ID: d.lastID, At: at}, true, nil
}

// Reader reads events from a stream.
type Reader struct {
	d     Decoder
	src   io.Reader
	buf   []byte
	err   error // the source's, once it returned one
	empty int   // reads in a row that returned nothing
}

// NewReader returns a reader of src with opts.
func NewReader(src io.Reader, opts Options) *Reader {
	r := &Reader{src: src}
	r.d.init(opts)
	r.d.clock = opts.Clock
	if r.d.clock == nil {
		r.d.clock = clock.Real{}
	}
	size := opts.BufferSize
	if size <= 0 {
		size = 64 << 10
	}
	r.buf = make([]byte, size)
	return r
}

// Next returns the next event, as Decoder.Next does. At the end of the
// stream it returns the source's error, io.EOF for a clean end; an event
// the stream ends inside is discarded, as the standard says.
func (r *Reader) Next() (Event, error) {
	for {
		ev, err := r.d.Next()
		if err != ErrNeedMore {
			return ev, err
		}
		if err := r.fill(); err != nil {
			return Event{}, err
		}
	}
}

// NextField returns the next field line, as Decoder.NextField does. A
// last line a stream ends cleanly without its line end still counts: it
// arrived. At the end it returns the source's error, io.EOF for a clean
// end.
func (r *Reader) NextField() (Field, error) {
	for {
		f, err := r.d.NextField()
		if err != ErrNeedMore {
			return f, err
		}
		if err := r.fill(); err != nil {
			if err == io.EOF && !r.d.eof {
				r.d.eof = true
				continue
			}
			return Field{}, err
		}
	}
}

// LastEventID is as Decoder.LastEventID.
func (r *Reader) LastEventID() string { return r.d.LastEventID() }

// Retry is as Decoder.Retry.
func (r *Reader) Retry() (time.Duration, bool) { return r.d.Retry() }

// fill feeds the decoder the source's next bytes, or returns its error.
func (r *Reader) fill() error {
	if r.err != nil {
		return r.err
	}
	n, err := r.src.Read(r.buf)
	if err != nil {
		r.err = err
	}
	if n > 0 {
		r.empty = 0
		r.d.Feed(r.buf[:n], time.Time{})
		return nil
	}
	if r.err != nil {
		return r.err
	}
	if r.empty++; r.empty >= 100 {
		r.err = io.ErrNoProgress
		return r.err
	}
	return nil
}
