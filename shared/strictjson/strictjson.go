// Package strictjson decodes a body or file that must hold exactly one JSON
// value: json.Decoder alone stops after the value, and its More reports
// false before a stray closing "}" or "]", so a run.json followed by "]}}"
// would pass for one object.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// ErrEmpty is Decode's answer for data with no value, only white space.
var ErrEmpty = errors.New("empty: want one JSON value")

// ErrTrailing is Decode's answer for data with more than white space after
// its one value.
var ErrTrailing = errors.New("more follows the JSON value: want exactly one")

// Decode decodes the one JSON value data holds into v. When onlyKnown is
// set, an object field v has no place for is an error, so that a misspelt
// field does not silently take its default.
func Decode(data []byte, v any, onlyKnown bool) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if onlyKnown {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); errors.Is(err, io.EOF) {
		return ErrEmpty
	} else if err != nil {
		return err
	}
	// Token past the value is io.EOF only when nothing but white space is
	// left; a stray delimiter or a second value is an error or a token.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return ErrTrailing
	}
	return nil
}
