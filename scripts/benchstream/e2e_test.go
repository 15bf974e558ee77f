package main

import (
	"slices"
	"testing"
)

func TestNewestRequest(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
		want int64
	}{
		{"none", `{"at":1,"requests":{"recent":[]}}`, 0},
		{"one", `{"recent":[{"requestId":"p-7","model":"m"}]}`, 7},
		{"newest last", `[{"requestId":"p-8"},{"requestId":"p-9"},{"requestId":"p-10"}]`, 10},
		{"other ids", `[{"requestId":"p-3"},{"requestId":"other"}]`, 3},
		{"cut short", `[{"requestId":"p-12`, 0},
		{"not a number", `[{"requestId":"p-x"}]`, 0},
	} {
		if got := newestRequest([]byte(tc.data)); got != tc.want {
			t.Errorf("%s: newestRequest = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestParseCounts(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
	}{
		{"10,500,1000", []int{10, 500, 1000}},
		{" 10 , 20", []int{10, 20}},
		{"10", []int{10}},
		{"", nil},
		{"10,,20", nil},
		{"10,0", nil},
		{"10,-5", nil},
		{"ten", nil},
	} {
		got, err := parseCounts(tc.in)
		if (err != nil) != (tc.want == nil) || !slices.Equal(got, tc.want) {
			t.Errorf("parseCounts(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestSpan(t *testing.T) {
	for _, tc := range []struct {
		vs   []float64
		want string
	}{
		{nil, "-"},
		{[]float64{6.81}, "6.8 ms"},
		{[]float64{6.81, 6.84}, "6.8 ms"},
		{[]float64{21.5, 20.1, 20.9}, "20.1–21.5 ms"},
	} {
		if got := span(tc.vs, "ms"); got != tc.want {
			t.Errorf("span(%v) = %q, want %q", tc.vs, got, tc.want)
		}
	}
}
