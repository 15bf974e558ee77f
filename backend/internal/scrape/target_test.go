package scrape

import (
	"strings"
	"testing"
)

// The targets as logs show them keep no password or query token.
func TestTargetsStringRedacts(t *testing.T) {
	var ts Targets
	for _, v := range []string{"http://user:s3cret@127.0.0.1:8000/metrics?token=t0k", "http://127.0.0.1:9000,vllm"} {
		if err := ts.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	got := ts.String()
	if strings.Contains(got, "s3cret") || strings.Contains(got, "t0k") || !strings.Contains(got, "user:xxxxx@127.0.0.1:8000") || !strings.Contains(got, "127.0.0.1:9000") {
		t.Errorf("String() = %q", got)
	}
}
