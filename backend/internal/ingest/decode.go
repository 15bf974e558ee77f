// Package ingest brings serving events onto the bus from outside the
// process: POST /api/metrics/events, a host's event stream followed with
// --events-url, and a recorded file replayed with --replay. Every event is
// validated by events.Parse; a bad one is counted with its reason and
// never stops the rest.
package ingest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// Rejection is one event that did not pass, and why. Line is the 1-based
// NDJSON line (or SSE event) number; Index the 0-based JSON array index.
type Rejection struct {
	Line   int    `json:"line,omitempty"`
	Index  *int   `json:"index,omitempty"`
	Field  string `json:"field,omitempty"`
	Reason string `json:"reason"`
}

// String is the rejection as one log line: where, which field, why.
func (r Rejection) String() string {
	var where string
	switch {
	case r.Line > 0:
		where = fmt.Sprintf("line %d: ", r.Line)
	case r.Index != nil:
		where = fmt.Sprintf("element %d: ", *r.Index)
	}
	if r.Field != "" {
		return where + r.Field + ": " + r.Reason
	}
	return where + r.Reason
}

func rejection(err error) Rejection {
	var pe *events.Error
	if errors.As(err, &pe) {
		return Rejection{Field: pe.Field, Reason: pe.Reason}
	}
	return Rejection{Reason: err.Error()}
}

// Decode reads events from r, NDJSON or a single JSON array (told apart by
// the first non-space byte), calling accept for each valid event, with its
// position in the input, and reject for each invalid one, in input order. It returns an error only when r
// itself fails, or the array is not well-formed JSON past some point or
// holds an element too large to read (see maxElementRead); the elements
// before it still count.
func Decode(r io.Reader, accept func(events.Event, Rejection), reject func(Rejection)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		b, err := br.Peek(1)
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			_, _ = br.ReadByte()
			continue
		case '[':
			return decodeArray(br, accept, reject)
		}
		return decodeLines(br, accept, reject)
	}
}

// maxElementRead bounds what the array decoder reads past the end of one
// element for the next: an event's limit, the blanks and comma before it,
// and room to see where it ends. json.Decoder holds a value whole before
// it finds its end, so without the bound one endless element would take
// all memory. An element over MaxLineBytes that ends within the bound is
// rejected and the array goes on; one that does not is not read further.
const maxElementRead = events.MaxLineBytes + 4<<10

// errElementTooLarge stops the array decoder's reads past maxElementRead.
var errElementTooLarge = errors.New("JSON array element too large")

// decodeArray reads one JSON array of events. Nothing inside an array tells
// where an element too large to read ends, so such an element ends the
// body with an error; the elements before it stand.
func decodeArray(r io.Reader, accept func(events.Event, Rejection), reject func(Rejection)) error {
	br := &boundedReader{r: r}
	dec := json.NewDecoder(br)
	bound := func() { br.limit = dec.InputOffset() + maxElementRead }
	bound()
	if _, err := dec.Token(); err != nil { // [
		return fmt.Errorf("reading the JSON array: %w", err)
	}
	i := 0
	for ; ; i++ {
		bound()
		if !dec.More() {
			break
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return arrayError(i, err)
		}
		idx := i
		ev, err := events.Parse(raw)
		if err != nil {
			rj := rejection(err)
			rj.Index = &idx
			reject(rj)
			continue
		}
		accept(ev, Rejection{Index: &idx})
	}
	if _, err := dec.Token(); err != nil { // ]
		if errors.Is(err, errElementTooLarge) {
			return arrayError(i, err)
		}
		return fmt.Errorf("closing the JSON array: %w", err)
	}
	// Only blanks may follow: a second array or a stray word is a
	// malformed body (the array's events stand). Read as they come, not
	// through the decoder, which would hold them.
	return onlyBlanks(io.MultiReader(dec.Buffered(), r))
}

func arrayError(i int, err error) error {
	if errors.Is(err, errElementTooLarge) {
		return fmt.Errorf("JSON array element %d is over the %d-byte limit for one event: the rest of the array is not read",
			i, events.MaxLineBytes)
	}
	return fmt.Errorf("JSON array element %d: %w", i, err)
}

// onlyBlanks reads r to its end and fails on the first byte that is not a
// JSON blank.
func onlyBlanks(r io.Reader) error {
	buf := make([]byte, 4<<10)
	for {
		n, err := r.Read(buf)
		for _, c := range buf[:n] {
			switch c {
			case ' ', '\t', '\r', '\n':
			default:
				return errors.New("more than blanks after the JSON array: send one array, or NDJSON")
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// boundedReader fails reads past limit (an offset from its start), and
// shortens a read that would pass it, so the decoder never holds more.
type boundedReader struct {
	r     io.Reader
	read  int64
	limit int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	room := b.limit - b.read
	if room <= 0 {
		return 0, errElementTooLarge
	}
	if int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}

// decodeLines reads NDJSON. A line over events.MaxLineBytes is rejected
// without being held in memory whole.
func decodeLines(br *bufio.Reader, accept func(events.Event, Rejection), reject func(Rejection)) error {
	return eachLine(br, func(n int, line []byte, tooLong int) {
		if tooLong > 0 {
			reject(Rejection{Line: n, Reason: fmt.Sprintf("line is %d bytes, over the %d-byte limit", tooLong, events.MaxLineBytes)})
			return
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			return
		}
		ev, err := events.Parse(line)
		if err != nil {
			rj := rejection(err)
			rj.Line = n
			reject(rj)
			return
		}
		accept(ev, Rejection{Line: n})
	})
}

// eachLine calls fn for each line of br (without its newline) with its
// 1-based number. For a line longer than events.MaxLineBytes fn gets nil
// and how many bytes were skipped.
func eachLine(br *bufio.Reader, fn func(n int, line []byte, tooLong int)) error {
	var buf []byte
	for n := 1; ; n++ {
		buf = buf[:0]
		skipped := 0
		var err error
		for {
			var chunk []byte
			chunk, err = br.ReadSlice('\n')
			if skipped == 0 && len(buf)+len(chunk) <= events.MaxLineBytes+1 {
				buf = append(buf, chunk...)
			} else {
				if skipped == 0 {
					skipped = len(buf)
					buf = buf[:0]
				}
				skipped += len(chunk)
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if err != nil && err != io.EOF {
			return err
		}
		if skipped > 0 {
			if err == nil {
				skipped-- // the newline
			}
			fn(n, nil, skipped)
		} else if len(buf) > 0 {
			fn(n, bytes.TrimSuffix(buf, []byte("\n")), 0)
		}
		if err == io.EOF {
			return nil
		}
	}
}
