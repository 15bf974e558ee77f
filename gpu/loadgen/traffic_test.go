package loadgen

import (
	"context"
	"sync"
	"testing"
)

func TestTraffic(t *testing.T) {
	srv := startEngine(t, nil)
	c := New(srv.URL+"/v1", Options{})
	defer c.Close()
	var mu sync.Mutex
	var results []Result
	var errs []error
	c.Traffic(context.Background(), TrafficOptions{Model: "reference-sim", RatePerSecond: 500, MaxInFlight: 64, MaxRequests: 30, Seed: 1},
		func(r Result, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			results = append(results, r)
		})
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	if len(results) < 10 {
		t.Fatalf("%d results of 30 arrivals", len(results))
	}
	endpoints := map[string]bool{}
	var cached int64
	for _, r := range results {
		endpoints[r.Endpoint] = true
		cached += r.CachedTokens
	}
	if !endpoints[Completions] || !endpoints[ChatCompletions] || cached == 0 {
		t.Errorf("endpoints %v, cached tokens %d: want both endpoints and prefix-cache hits", endpoints, cached)
	}
}
