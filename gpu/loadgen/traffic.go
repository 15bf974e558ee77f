package loadgen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// TrafficOptions shape synthetic traffic: what `serve --reference-engine`
// sends so a fresh machine shows a live panel.
type TrafficOptions struct {
	Model string
	// RatePerSecond is the mean arrival rate (Poisson arrivals); default 1.
	RatePerSecond float64
	// MaxInFlight bounds concurrent requests; arrivals beyond it are
	// skipped, as a client with a fixed pool would. Default 8.
	MaxInFlight int
	// MaxRequests stops after this many requests; 0 runs until ctx ends.
	MaxRequests int
	Seed        uint64
}

// sharedPrefixes stand for system prompts that many requests share, so
// the prefix cache has something to hit.
const sharedPrefixes = 3

// Traffic sends synthetic requests until ctx ends (or MaxRequests): a mix
// of completions and chat completions, most opening with one of a few
// shared prefixes and the rest unique, with varied lengths. done, when not
// nil, receives every outcome.
func (c *Client) Traffic(ctx context.Context, o TrafficOptions, done func(Result, error)) {
	if o.RatePerSecond <= 0 {
		o.RatePerSecond = 1
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 8
	}
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	prefixes := make([]string, sharedPrefixes)
	for i := range prefixes {
		prefixes[i] = Prompt(200+200*i, fmt.Sprintf("system-%d", i))
	}
	slots := make(chan struct{}, o.MaxInFlight)
	var wg sync.WaitGroup
	defer wg.Wait()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for n := 0; o.MaxRequests == 0 || n < o.MaxRequests; n++ {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		timer.Reset(time.Duration(rng.ExpFloat64() / o.RatePerSecond * float64(time.Second)))
		select {
		case slots <- struct{}{}:
		default:
			continue // pool full: this arrival is dropped
		}
		req := Request{Endpoint: Completions, Model: o.Model, MaxTokens: 16 + rng.IntN(240), Timeout: 5 * time.Minute}
		if rng.IntN(2) == 0 {
			req.Endpoint = ChatCompletions
		}
		nonce := fmt.Sprintf("req-%d-%d", o.Seed, n)
		if rng.IntN(10) < 6 {
			req.Prompt = prefixes[rng.IntN(sharedPrefixes)] + " " + Prompt(20+rng.IntN(80), nonce)
		} else {
			req.Prompt = Prompt(50+rng.IntN(1500), nonce)
		}
		wg.Go(func() {
			defer func() { <-slots }()
			res, err := c.Do(ctx, req)
			if done != nil && ctx.Err() == nil {
				done(res, err)
			}
		})
	}
}
