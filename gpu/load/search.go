package load

import (
	"fmt"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// precision ends a bisection: the rate that failed within 5 % of the one
// that passed.
const precision = 1.05

// search finds the highest open-loop rate that passes (passes): a
// doubling ladder from the start rate until a point fails, then bisection
// between the highest that passed and the lowest that failed, at most
// MaxPoints points in all.
func search(f bench.FindMaxRate, cap int, measure func(point) ([]bench.LoadPoint, error)) (*bench.MaxRate, error) {
	mr := &bench.MaxRate{MinShare: f.MinShare}
	rate := f.StartRate
	for mr.Points < f.MaxPoints {
		kind := "ladder"
		if mr.FailedAt > 0 {
			kind = "bisect"
			rate = (mr.Rate + mr.FailedAt) / 2
			if mr.Rate == 0 {
				rate = mr.FailedAt / 2
			}
		}
		reps, err := measure(point{rate: rate, streams: cap, search: kind})
		mr.Points++
		if err != nil {
			return mr, err
		}
		if passes(reps, f.MinShare) {
			mr.Rate = rate
			if mr.FailedAt == 0 {
				rate *= 2
			}
		} else {
			mr.FailedAt = rate
		}
		if mr.FailedAt > 0 && mr.Rate > 0 && mr.FailedAt <= precision*mr.Rate {
			break
		}
		if rate > bench.MaxLoadRate {
			mr.Note = fmt.Sprintf("stopped at the bound of %d requests/s", bench.MaxLoadRate)
			return mr, nil
		}
	}
	switch {
	case mr.Rate == 0:
		mr.Note = fmt.Sprintf("no rate passed in %d points: the lowest tried was %g requests/s", mr.Points, rate)
	case mr.FailedAt == 0:
		mr.Note = fmt.Sprintf("every rate passed in %d points: the server carries more than %g requests/s", mr.Points, mr.Rate)
	default:
		mr.Note = fmt.Sprintf("passed at %.4g requests/s, failed at %.4g, after %d points", mr.Rate, mr.FailedAt, mr.Points)
	}
	return mr, nil
}

// passes: every repeat kept up (not saturated) and served at least share
// of its requests well (meeting the SLO, or completed without one).
func passes(reps []bench.LoadPoint, share float64) bool {
	for _, lp := range reps {
		good := lp.Completed
		if lp.Goodput != nil {
			good = lp.GoodRequests
		}
		if lp.Saturated || lp.Requests == 0 || float64(good) < share*float64(lp.Requests) {
			return false
		}
	}
	return true
}
