package proxy

import (
	"strings"
	"testing"
)

// FuzzCleanPath: whatever the path, what is forwarded is /v1 or under it,
// holds no dot segment (decoded), and cleans to itself.
func FuzzCleanPath(f *testing.F) {
	for _, seed := range []string{"/v1/models", "/v1/../admin", "/v1/%2e%2e/x", "/v1/a/./b/../c/", "/v1/..%2f..%2fetc",
		"/v1/models/org%2Fname", "//v1", "/v1%2f..", "/v1/%zz", "/v1/\x00", "/v1/..\\x", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		forward, decoded, err := cleanPath(raw)
		if err != nil {
			return
		}
		if forward != "/v1" && !strings.HasPrefix(forward, "/v1/") {
			t.Fatalf("%q forwards %q, outside /v1", raw, forward)
		}
		for _, seg := range strings.Split(decoded, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("%q forwards %q, with a dot segment", raw, forward)
			}
		}
		again, _, err := cleanPath(forward)
		if err != nil || again != forward {
			t.Fatalf("%q forwards %q, which cleans to %q, %v", raw, forward, again, err)
		}
	})
}
