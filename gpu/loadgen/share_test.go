package loadgen

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/gpu/engine/enginetest"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
)

// BenchmarkClientShare256 measures the load generator's own share of the
// TTFT it reports, across processes as in a real run: the reference engine
// runs as its own process (this test binary as `engine`), and each
// stream's share is its TTFT minus the engine's own received-to-first-token
// time (its server_timing stamps, read on the same machine's clock): the
// request's writing, the loopback both ways, and, without arrival stamps,
// the client's wait for a core and its reading and parsing of the chunk.
// Streams start one every 3 ms and each lasts 1.6 s, so the later ones
// measure while up to 255 others stream.
//
// Two clients take turns round by round, the order flipped every round:
// the load generator as a run uses it (chunks timed by their arrival
// stamps on Linux) and the same client timing chunks when it reads them;
// it reports both p50s and their ratio (read / stamped).
//
//	go test -run '^$' -bench ClientShare -benchtime 3x ./gpu/loadgen/
func BenchmarkClientShare256(b *testing.B) { benchClientShare(b, 256) }

// BenchmarkClientShare64 is the same with 64 streams.
func BenchmarkClientShare64(b *testing.B) { benchClientShare(b, 64) }

// BenchmarkClientShare1 is one stream at a time: the floor.
func BenchmarkClientShare1(b *testing.B) { benchClientShare(b, 1) }

func benchClientShare(b *testing.B, streams int) {
	base := spawnShareEngine(b, streams) + "/v1"
	c := New(base, Options{})
	defer c.Close()
	// readClock is the real clock under another type: the client times
	// chunks by it when it reads them, without arrival stamps.
	read := New(base, Options{Clock: readClock{}})
	defer read.Close()
	prompt := Prompt(100, "")
	var shares, readShares, server, got, readGot, spans []float64
	inTurns(b,
		func() (err error) { got, spans, err = roundShares(c, streams, prompt); return err },
		func() (err error) { readGot, _, err = roundShares(read, streams, prompt); return err },
		func() {
			shares = append(shares, got...)
			readShares = append(readShares, readGot...)
			server = append(server, spans...)
		})
	sort.Float64s(shares)
	sort.Float64s(readShares)
	sort.Float64s(server)
	p50, read50 := bench.Percentile(shares, 50), bench.Percentile(readShares, 50)
	b.ReportMetric(p50, "client-share-p50-ms")
	b.ReportMetric(bench.Percentile(shares, 99), "client-share-p99-ms")
	b.ReportMetric(read50, "read-share-p50-ms")
	b.ReportMetric(read50/p50, "read/stamped")
	b.ReportMetric(bench.Percentile(server, 50), "server-ttft-p50-ms")
	if testing.Verbose() {
		fmt.Printf("client share of TTFT over %d streams: p50 %.3f ms, p99 %.3f ms (timed when read: %.3f / %.3f ms); server's own TTFT p50 %.3f ms\n",
			len(shares), p50, bench.Percentile(shares, 99), read50, bench.Percentile(readShares, 99), bench.Percentile(server, 50))
	}
}

// inTurns runs b.N+1 rounds of two sides, one after the other, the order
// flipped every round so the machine's drift falls on both, and calls
// count after each round but the first: round 0 opens the connections (a
// load generator keeps its connections, and connection setup is not TTFT
// error).
func inTurns(b *testing.B, first, second func() error, count func()) {
	b.ResetTimer()
	for round := range b.N + 1 {
		sides := [2]func() error{first, second}
		if round%2 == 1 {
			sides[0], sides[1] = sides[1], sides[0]
		}
		for _, side := range sides {
			if err := side(); err != nil {
				b.Fatal(err)
			}
		}
		if round > 0 {
			count()
		}
	}
	b.StopTimer()
}

// readClock is the real clock, but not clock.Real: a client given it times
// chunks when it reads them.
type readClock struct{ clock.Real }

// spawnShareEngine runs the reference engine the share benchmarks measure
// against: room for every stream in one batch, 25 tok/s each, prefill and
// load next to free.
func spawnShareEngine(b *testing.B, streams int) string {
	return enginetest.Spawn(b, "", "--batch-capacity", strconv.Itoa(streams), "--prefill-rate", "1000000",
		"--decode-rate", "25", "--batch-slowdown", "0", "--load-ms", "0")
}

// roundShares runs one shareRound and returns each stream's client share
// of TTFT and the engine's own received-to-first-token span, in ms.
func roundShares(c *Client, streams int, prompt string) (shares, server []float64, err error) {
	results, err := shareRound(c, streams, prompt)
	if err != nil {
		return nil, nil, err
	}
	for i, r := range results {
		share, ok := r.ClientShare()
		if !ok {
			return nil, nil, fmt.Errorf("stream %d: no server_timing from the engine", i)
		}
		shares = append(shares, ms(share))
		server = append(server, ms(r.ServerFirstToken.Sub(r.ServerReceived)))
	}
	return shares, server, nil
}

// shareRound starts streams completions 3 ms apart, each 40 tokens at the
// engine's decode rate, and returns their results once all have ended.
func shareRound(c *Client, streams int, prompt string) ([]Result, error) {
	results := make([]Result, streams)
	errs := make([]error, streams)
	var wg sync.WaitGroup
	tick := time.NewTicker(3 * time.Millisecond)
	for i := range streams {
		<-tick.C
		wg.Go(func() {
			results[i], errs[i] = c.Do(context.Background(), Request{
				Endpoint: Completions, Model: "reference-sim", Prompt: prompt, MaxTokens: shareTokens, Timeout: time.Minute,
			})
		})
	}
	tick.Stop()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("stream %d: %w", i, err)
		}
	}
	return results, nil
}

// shareTokens is each measured stream's length: 1.6 s at 25 tok/s.
const shareTokens = 40

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
