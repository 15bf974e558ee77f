package load

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// arrivals gives the gaps between an open loop's requests: a rate's mean
// gap, spaced as the arrival process says.
type arrivals struct {
	kind  string
	mean  float64 // seconds
	shape float64 // gamma's
	rng   *rand.Rand
}

func newArrivals(kind string, rate, burstiness float64, rng *rand.Rand) *arrivals {
	return &arrivals{kind: kind, mean: 1 / rate, shape: burstiness, rng: rng}
}

// next is the gap before the next request.
func (a *arrivals) next() time.Duration {
	var s float64
	switch a.kind {
	case bench.ArrivalConstant:
		s = a.mean
	case bench.ArrivalGamma:
		// Mean shape*scale = a.mean; shape < 1 bunches requests (vLLM's
		// burstiness), 1 is Poisson.
		s = gamma(a.rng, a.shape) * a.mean / a.shape
	default:
		s = a.rng.ExpFloat64() * a.mean
	}
	return time.Duration(s * float64(time.Second))
}

// gamma draws from Gamma(shape, 1) by Marsaglia and Tsang's method
// (shape < 1 boosted by U^(1/shape)).
func gamma(rng *rand.Rand, shape float64) float64 {
	if shape < 1 {
		return gamma(rng, shape+1) * math.Pow(rng.Float64(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
