package events

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// The host types every figure as a JavaScript number, and a producer in
// another language writes what its floats print: 812.0 for a count,
// 1.5e9 for a size, a fractional byte count for a projection (a quantized
// KV cache's bytes per token need not be whole). encoding/json refuses
// all of these for an integer field, which would reject the whole event,
// so Parse reads them again through wholeNumbers: an integral value is
// the integer it is, and a size is rounded to the nearest byte. A
// fractional count of tokens, rows or lookups stays an error: no counter
// makes one.

// wholeNumbers rewrites, in the JSON object obj, every integer field of
// payload's type that holds a number written as a float and meant as an
// integer, and reports whether it changed any. It is the slow path: Parse
// calls it only after a decode failed on a number.
func wholeNumbers(obj []byte, payload any) ([]byte, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(obj, &fields) != nil {
		return nil, false
	}
	changed := false
	for _, f := range integerFields(reflect.TypeOf(payload).Elem()) {
		raw := bytes.TrimSpace(fields[f])
		if len(raw) == 0 || bytes.IndexAny(raw, ".eE") < 0 || raw[0] == '"' {
			continue // absent, null, a plain integer, or not a number
		}
		x, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || math.Abs(x) > 1<<62 {
			continue // not a number, or past any bound: left to the decode's error
		}
		if x != math.Trunc(x) {
			if !isSize(f) {
				continue
			}
			x = math.Round(x)
		}
		fields[f] = strconv.AppendInt(nil, int64(x), 10)
		changed = true
	}
	if !changed {
		return nil, false
	}
	out, err := json.Marshal(fields)
	return out, err == nil
}

// isSize reports whether an integer field is a size in bytes.
func isSize(field string) bool { return field == "bytes" || strings.HasSuffix(field, "Bytes") }

var integerFieldsOf sync.Map // reflect.Type → []string

// integerFields are the JSON names of t's integer fields (int, int64,
// *int64), in the order t declares them.
func integerFields(t reflect.Type) []string {
	if v, ok := integerFieldsOf.Load(t); ok {
		return v.([]string)
	}
	var names []string
	for i := range t.NumField() {
		sf := t.Field(i)
		ft := sf.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() != reflect.Int && ft.Kind() != reflect.Int64 {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	integerFieldsOf.Store(t, names)
	return names
}
