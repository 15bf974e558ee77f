package profiles

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzDecode: whatever a plan file holds, decoding answers a valid plan or
// ErrInvalid naming the profile, and never panics.
func FuzzDecode(f *testing.F) {
	good, _ := json.Marshal(validPlan())
	for _, seed := range []string{
		string(good), "", "{", "null", "[]", `{"scope":"all","cells":[]}`, `{"scope":"sideways"}`,
		`{"scope":"all","cells":[{"model":"m","kind":"tree","server":{"argv":["x"]}}]}`,
		`{"scope":"all","cells":[],"bogus":1}`, `{"cells":[{"server":{"argv":["` + string(rune(0)) + `"]}}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := decode("fuzz", data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("decode accepted an invalid plan: %v", err)
		}
	})
}
