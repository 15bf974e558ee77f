package snapshot

import (
	"encoding/json"
	"math"
	"reflect"
)

// Encode is the snapshot as JSON. It cannot fail: a number JSON cannot
// carry (NaN, ±Inf), which validated events never produce, is written as
// 0 (or null where the field is optional) and reported by sanitized, so
// one bad value can never stop the snapshot or the stream.
func Encode(s *Snapshot) (data []byte, sanitized bool) {
	data, err := json.Marshal(s)
	if err == nil {
		return data, false
	}
	c := *s
	clean := reflect.ValueOf(&c).Elem()
	sanitize(clean)
	if data, err = json.Marshal(&c); err != nil {
		// Unreachable: every float is finite now. Still an object.
		data = []byte(`{"at":0,"models":[],"schedulers":[],"caches":[],"series":[]}`)
	}
	return data, true
}

// sanitize replaces non-finite floats reachable from v, copying what it
// changes below pointers, slices and maps so the original is untouched.
func sanitize(v reflect.Value) {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			v.SetFloat(0)
		}
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		if e := v.Elem(); e.Kind() == reflect.Float64 && !finite(e.Float()) {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		cp := reflect.New(v.Type().Elem())
		cp.Elem().Set(v.Elem())
		sanitize(cp.Elem())
		v.Set(cp)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				sanitize(f)
			}
		}
	case reflect.Slice:
		if v.IsNil() {
			return
		}
		cp := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(cp, v)
		for i := range cp.Len() {
			sanitize(cp.Index(i))
		}
		v.Set(cp)
	case reflect.Map:
		if v.IsNil() {
			return
		}
		cp := reflect.MakeMapWithSize(v.Type(), v.Len())
		it := v.MapRange()
		for it.Next() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			sanitize(e)
			cp.SetMapIndex(it.Key(), e)
		}
		v.Set(cp)
	}
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
