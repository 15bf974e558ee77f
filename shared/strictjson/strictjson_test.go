package strictjson

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestDecode(t *testing.T) {
	type obj struct {
		A int `json:"a"`
	}
	cases := []struct {
		name      string
		in        string
		onlyKnown bool
		want      error // nil, ErrEmpty, ErrTrailing, or errAny
	}{
		{"one object", `{"a":1}`, false, nil},
		{"blanks around", " \n\t{\"a\":1}\r\n ", false, nil},
		{"empty", "", false, ErrEmpty},
		{"blanks only", " \n ", false, ErrEmpty},
		{"stray brace", `{"a":1}}`, false, ErrTrailing},
		{"stray bracket", `{"a":1}]`, false, ErrTrailing},
		{"stray brackets after", `{"a":1}]}}}`, false, ErrTrailing},
		{"second object", `{"a":1}{"a":2}`, false, ErrTrailing},
		{"a word after", `{"a":1} x`, false, ErrTrailing},
		{"a number after", `{"a":1} 2`, false, ErrTrailing},
		{"unknown field allowed", `{"a":1,"b":2}`, false, nil},
		{"unknown field refused", `{"a":1,"b":2}`, true, errAny},
		{"not JSON", `{"a":`, false, errAny},
		{"wrong type", `{"a":"x"}`, false, errAny},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var v obj
			err := Decode([]byte(tc.in), &v, tc.onlyKnown)
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("Decode(%q) = %v, want nil", tc.in, err)
			case tc.want == errAny && (err == nil || errors.Is(err, ErrEmpty) || errors.Is(err, ErrTrailing)):
				t.Fatalf("Decode(%q) = %v, want a decoding error", tc.in, err)
			case tc.want != nil && tc.want != errAny && !errors.Is(err, tc.want):
				t.Fatalf("Decode(%q) = %v, want %v", tc.in, err, tc.want)
			}
		})
	}
}

var errAny = errors.New("any decoding error")

// FuzzDecode: whatever the input, Decode accepts exactly what
// json.Unmarshal accepts (one value, blanks around it) and never panics.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1}}`, `[1]]`, ` 1 `, `""`, `{"profile":"0"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var a, b any
		errA := Decode(data, &a, false)
		errB := json.Unmarshal(data, &b)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("Decode(%q) = %v but json.Unmarshal = %v", data, errA, errB)
		}
	})
}
