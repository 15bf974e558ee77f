package store_test

import (
	"fmt"

	"github.com/mlx-bun/mlx-metrics/backend/internal/store"
	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// The store reduces parsed events into the snapshot; it has no clock of its
// own, so the same events always give the same snapshot.
func Example() {
	s := store.New(1_796_280_000_000, store.Options{})
	for _, line := range []string{
		`{"type":"model.load","at":1796280000000,"model":"qwen","phase":"finished","ms":2400}`,
		`{"type":"request.finished","at":1796280001000,"model":"qwen","requestId":"r1","finish":"stop","promptTokens":812,"cachedPromptTokens":768,"completionTokens":64,"queueMs":null,"ttftMs":88.1,"prefillTokensPerSecond":null,"decodeTokensPerSecond":60,"totalMs":1154}`,
	} {
		ev, err := events.Parse([]byte(line))
		if err != nil {
			panic(err)
		}
		s.Apply(ev)
	}
	snap := s.Snapshot(1_796_280_002_000)
	m := snap.Models[0]
	fmt.Println(m.Model, m.State, *m.LastLoadMs)
	fmt.Println("finished", snap.Requests.Finished, "ttft p50", snap.Requests.Window.TTFTMs.P50)
	fmt.Printf("tpot p50 %.1f ms\n", snap.Requests.Window.TPOTMs.P50)
	// Output:
	// qwen resident 2400
	// finished 1 ttft p50 88.1
	// tpot p50 16.7 ms
}
