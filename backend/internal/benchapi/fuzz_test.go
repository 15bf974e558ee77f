package benchapi

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeStart: whatever body POST /bench gets, the decoder answers a
// non-empty profile name that the body holds as its one field, or an error
// whose message is bounded; it never panics.
func FuzzDecodeStart(f *testing.F) {
	for _, seed := range []string{
		`{"profile":"smoke"}`, ``, ` `, `{}`, `{"profile":""}`, `{"profile":null}`, `{"profile":5}`,
		`{"profile":"smoke","plan":{}}`, `{"profile":"a"}{"profile":"b"}`, `{"profile":"../../etc/passwd"}`,
		`{"Profile":"smoke"}`, `{"profile":"\u0000"}`, `[{"profile":"smoke"}]`, `{"profile":"smoke"} `,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		name, err := decodeStart(body)
		if err != nil {
			if name != "" {
				t.Fatalf("a name %q with the error %v", name, err)
			}
			if n := len(err.Error()); n > 200 {
				t.Fatalf("unbounded message: %d bytes", n)
			}
			return
		}
		if name == "" {
			t.Fatal("no name and no error")
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(body, &fields); err != nil {
			t.Fatalf("decoded %q from a body that is not one JSON object: %v", name, err)
		}
		var again string
		for k, v := range fields {
			if err := json.Unmarshal(v, &again); err != nil || again != name {
				t.Fatalf("field %q is %s, decoded %q", k, v, name)
			}
		}
	})
}
