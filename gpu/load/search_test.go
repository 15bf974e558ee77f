package load

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// The search against a server that carries up to capacity requests/s:
// the ladder doubles to the first failure, bisection closes in to 5 %.
func TestSearch(t *testing.T) {
	for _, tc := range []struct {
		name      string
		capacity  float64
		f         bench.FindMaxRate
		wantRate  float64 // 0: none passed
		tolerance float64
		note      string
	}{
		{"found", 37, bench.FindMaxRate{StartRate: 1, MinShare: 0.95, MaxPoints: 20}, 37, 0.05, "passed at"},
		{"bounded", 37, bench.FindMaxRate{StartRate: 1, MinShare: 0.95, MaxPoints: 4}, 8, 0, "every rate passed in 4 points"},
		{"none passes", 0.01, bench.FindMaxRate{StartRate: 1, MinShare: 0.95, MaxPoints: 5}, 0, 0, "no rate passed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rates []float64
			measure := func(p point) ([]bench.LoadPoint, error) {
				rates = append(rates, p.rate)
				lp := bench.LoadPoint{OfferedRate: p.rate, Requests: 100, Completed: 100, Saturated: p.rate > tc.capacity}
				return []bench.LoadPoint{lp}, nil
			}
			mr, err := search(tc.f, 0, measure)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(mr.Rate-tc.wantRate) > tc.tolerance*tc.wantRate || mr.Points != len(rates) || mr.Points > tc.f.MaxPoints {
				t.Errorf("found %g in %d points (%v), want %g", mr.Rate, mr.Points, rates, tc.wantRate)
			}
			if mr.Rate > tc.capacity {
				t.Errorf("found %g over the capacity %g", mr.Rate, tc.capacity)
			}
			if !strings.Contains(mr.Note, tc.note) {
				t.Errorf("note %q, want %q in it", mr.Note, tc.note)
			}
		})
	}
	// A point that fails (the server gone) ends the search with it.
	mr, err := search(bench.FindMaxRate{StartRate: 1, MinShare: 0.9, MaxPoints: 9}, 0, func(point) ([]bench.LoadPoint, error) {
		return nil, errors.New("gone")
	})
	if err == nil || mr.Points != 1 {
		t.Errorf("err %v after %d points", err, mr.Points)
	}
}

// Goodput, not completion, decides a point when an SLO is set.
func TestPasses(t *testing.T) {
	g := 1.0
	for _, tc := range []struct {
		lp   bench.LoadPoint
		want bool
	}{
		{bench.LoadPoint{Requests: 100, Completed: 96}, true},
		{bench.LoadPoint{Requests: 100, Completed: 94}, false},
		{bench.LoadPoint{Requests: 100, Completed: 100, Goodput: &g, GoodRequests: 90}, false},
		{bench.LoadPoint{Requests: 100, Completed: 100, Goodput: &g, GoodRequests: 95}, true},
		{bench.LoadPoint{Requests: 100, Completed: 100, Saturated: true}, false},
		{bench.LoadPoint{}, false},
	} {
		if got := passes([]bench.LoadPoint{tc.lp}, 0.95); got != tc.want {
			t.Errorf("passes(%+v) = %v", tc.lp, got)
		}
	}
}
