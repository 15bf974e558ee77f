package main

import (
	"slices"
	"testing"
	"time"
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

func TestPace(t *testing.T) {
	const mean = 5 * time.Millisecond
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		name     string
		now      time.Duration // since t0, when next is asked
		min, max time.Duration // the wait it may answer
	}{
		{"on time", 0, 4 * time.Millisecond, 6 * time.Millisecond},
		{"part of a gap late", 3 * time.Millisecond, time.Millisecond, 3 * time.Millisecond},
		{"a gap behind: at once", 7 * time.Millisecond, 0, 0},
	} {
		for range 200 { // every draw within the bounds
			p := newPace(mean, t0)
			if got := p.next(t0.Add(tc.now)); got < tc.min || got > tc.max {
				t.Fatalf("%s: next waits %v, want %v..%v", tc.name, got, tc.min, tc.max)
			}
		}
	}
	// Fallen behind, it goes on from now rather than catching up.
	p := newPace(mean, t0)
	late := t0.Add(time.Second)
	p.next(late)
	if got := p.next(late); got < 4*time.Millisecond {
		t.Errorf("after falling behind the next gap is %v, want a whole one", got)
	}
}
