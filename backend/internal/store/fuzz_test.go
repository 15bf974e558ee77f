package store

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// FuzzSnapshotAlwaysEncodes: whatever events pass validation, in whatever
// order and number, the snapshot encodes as JSON without being sanitized.
func FuzzSnapshotAlwaysEncodes(f *testing.F) {
	f.Add([]byte(`{"type":"scheduler.sample","at":1,"model":"m","active":1,"capacity":8,"queued":0,"tokensPerSecond":1e9}
{"type":"scheduler.sample","at":1,"model":"n","active":1,"capacity":8,"queued":0,"tokensPerSecond":1e9}
{"type":"cache.sample","at":2,"model":"m","cache":"prefix","bytes":0,"capacityBytes":null,"hits":9007199254740992,"misses":9007199254740992}
{"type":"request.finished","at":3,"model":"m","requestId":"r","finish":"stop","promptTokens":1073741824,"cachedPromptTokens":1073741824,"completionTokens":0,"queueMs":1e9,"ttftMs":1e9,"prefillTokensPerSecond":1e9,"decodeTokensPerSecond":1e9,"totalMs":1e9}`))
	f.Add([]byte(`{"type":"model.unload","at":5,"model":"m","reason":"evicted","drainMs":1e9,"flushed":true,"flushMs":1e9}
{"type":"model.load","at":6,"model":"n","phase":"finished","ms":1e9}`))
	// Rates within the bounds whose inverse is not: a denormal decode rate
	// made TPOT +Inf, whose histogram bin panicked the reducer.
	f.Add([]byte(`{"type":"request.finished","at":3,"model":"m","requestId":"r","finish":"stop","promptTokens":1,"cachedPromptTokens":0,"completionTokens":1,"queueMs":null,"ttftMs":1,"prefillTokensPerSecond":5e-324,"decodeTokensPerSecond":1e-310,"totalMs":2}
{"type":"request.finished","at":4,"model":"m","requestId":"s","finish":"stop","promptTokens":1,"cachedPromptTokens":0,"completionTokens":1,"queueMs":null,"ttftMs":1,"prefillTokensPerSecond":1e-306,"decodeTokensPerSecond":5e-324,"totalMs":2}`))
	f.Fuzz(func(t *testing.T, input []byte) {
		s := New(1, Options{MaxModels: 8, Window: 16, Series: 16})
		for _, line := range bytes.Split(input, []byte("\n")) {
			if ev, err := events.Parse(line); err == nil {
				s.Apply(ev)
			}
		}
		snap := s.Snapshot(1)
		if _, err := json.Marshal(snap); err != nil {
			t.Fatalf("snapshot does not encode: %v", err)
		}
	})
}
