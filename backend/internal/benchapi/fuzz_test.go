package benchapi

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeStart: whatever body POST /bench gets, the decoder answers the
// non-empty text of the body's "profile" field, or an error whose message
// is bounded; it never panics.
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
		if err := json.Unmarshal(fields["profile"], &again); err != nil || again != name {
			t.Fatalf("profile is %s, decoded %q", fields["profile"], name)
		}
	})
}

// As the original, fields beside "profile" change nothing.
func TestDecodeStartIgnoresOtherFields(t *testing.T) {
	for _, body := range []string{
		`{"profile":"smoke"}`, `{"profile":"smoke","plan":{"cells":[]}}`, `{"note":1,"profile":"smoke"}`,
		`{"profile":"other","profile":"smoke"}`, ` {"profile":"smoke"} `,
	} {
		if name, err := decodeStart([]byte(body)); name != "smoke" || err != nil {
			t.Errorf("%s: %q, %v", body, name, err)
		}
	}
}
