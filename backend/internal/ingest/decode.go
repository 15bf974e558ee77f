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
// itself fails or the array is not well-formed JSON past some point (the
// elements before it still count).
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

func decodeArray(r io.Reader, accept func(events.Event, Rejection), reject func(Rejection)) error {
	dec := json.NewDecoder(r)
	if _, err := dec.Token(); err != nil { // [
		return fmt.Errorf("reading the JSON array: %w", err)
	}
	for i := 0; dec.More(); i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("JSON array element %d: %w", i, err)
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
		return fmt.Errorf("closing the JSON array: %w", err)
	}
	// Only blanks may follow: a second array or a stray word is a
	// malformed body (the array's events stand).
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more than blanks after the JSON array: send one array, or NDJSON")
	}
	return nil
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
