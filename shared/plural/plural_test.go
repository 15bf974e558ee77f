package plural

import (
	"fmt"
	"testing"
)

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, "0 runs"},
		{1, "1 run"},
		{2, "2 runs"},
		{-1, "-1 runs"},
		{1000, "1000 runs"},
	} {
		if got := Count(tc.n, "run", "runs"); got != tc.want {
			t.Errorf("Count(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	if got := Count(uint64(1), "event", "events"); got != "1 event" {
		t.Errorf("uint64: %q", got)
	}
}

func ExampleCount() {
	fmt.Println(Count(1, "problem", "problems"))
	fmt.Println(Count(3, "problem", "problems"))
	// Output:
	// 1 problem
	// 3 problems
}

func TestWord(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "requests"}, {1, "request"}, {2, "requests"}, {1234, "requests"}} {
		if got := Word(tc.n, "request", "requests"); got != tc.want {
			t.Errorf("Word(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
