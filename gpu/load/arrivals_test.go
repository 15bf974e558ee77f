package load

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// Each arrival process keeps the rate's mean gap; its spread is the
// process's: none for constant, CV 1 for Poisson, 1/sqrt(shape) for gamma.
func TestArrivals(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		shape float64
		cv    float64
	}{
		{bench.ArrivalConstant, 1, 0},
		{bench.ArrivalPoisson, 1, 1},
		{bench.ArrivalGamma, 0.25, 2},
		{bench.ArrivalGamma, 4, 0.5},
	} {
		const rate, n = 20.0, 200_000
		a := newArrivals(tc.kind, rate, tc.shape, rand.New(rand.NewPCG(1, 2)))
		var sum, sq float64
		for range n {
			s := a.next().Seconds()
			sum += s
			sq += s * s
		}
		mean := sum / n
		cv := math.Sqrt(sq/n-mean*mean) / mean
		if math.Abs(mean*rate-1) > 0.01 {
			t.Errorf("%s shape %g: mean gap %v s, want %v", tc.kind, tc.shape, mean, 1/rate)
		}
		if math.Abs(cv-tc.cv) > 0.03*math.Max(1, tc.cv) {
			t.Errorf("%s shape %g: CV %.3f, want %.3f", tc.kind, tc.shape, cv, tc.cv)
		}
	}
}

// Each point and repeat has a stream of its own, the same for the same
// seed, and over many points the schedules keep the rate (one point of 50
// Poisson requests spreads about 14 % by itself).
func TestPointSchedulesIndependent(t *testing.T) {
	const rate, n, points = 4.0, 49, 64
	sum := 0.0
	for i := 1; i <= points; i++ {
		a := newArrivals(bench.ArrivalPoisson, rate, 1, pointRNG(1, i, 1))
		for range n {
			sum += a.next().Seconds()
		}
	}
	if mean := sum / (n * points) * rate; math.Abs(mean-1) > 0.05 {
		t.Errorf("the mean gap over %d points is %.3f of the rate's", points, mean)
	}
	first := func(seed uint64, index, repeat int) uint64 { return pointRNG(seed, index, repeat).Uint64() }
	if first(1, 1, 1) == first(1, 2, 1) || first(1, 1, 1) == first(1, 1, 2) || first(1, 1, 1) != first(1, 1, 1) {
		t.Error("points or repeats share a stream, or a seed does not repeat its stream")
	}
}
