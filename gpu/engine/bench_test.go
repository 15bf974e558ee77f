package engine

import (
	"context"
	"testing"
)

// BenchmarkScheduler256 is the scheduler's own CPU cost: 256 rows of 64
// tokens on a clock that jumps to each step, reported per generated token.
//
//	go test -run '^$' -bench Scheduler ./gpu/engine/
func BenchmarkScheduler256(b *testing.B) {
	cfg := testConfig()
	cfg.BatchCapacity = 256
	for range b.N {
		e, err := New(cfg, Options{Clock: newJumpClock()})
		if err != nil {
			b.Fatal(err)
		}
		var streams []*Stream
		for i := range 256 {
			s, err := e.Submit(context.Background(), prompt(128, uint64(i)), 64)
			if err != nil {
				b.Fatal(err)
			}
			streams = append(streams, s)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { e.Run(ctx); close(done) }()
		for _, s := range streams {
			for {
				_, res, err := s.Next(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				if res != nil {
					break
				}
			}
		}
		cancel()
		<-done
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*256*64), "ns/token")
}
