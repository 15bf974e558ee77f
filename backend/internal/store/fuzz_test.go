package store

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
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

// FuzzScrapedSnapshot: whatever a scraped engine's histograms hold, mixed
// with reported requests, the snapshot encodes and every distribution is
// in order (min ≤ p1 ≤ p5 ≤ p50 ≤ p95 ≤ p99 ≤ max), finite, within its
// window. A line "R at model finished bounds|counts|sum" is a
// requests.sample (the bus only, so not in the wire's form); any other a
// wire event.
func FuzzScrapedSnapshot(f *testing.F) {
	f.Add([]byte("R 1000 m 3 100,200,400|1,2,0,0|450\nR 3000 m 4 100,200,400|0,4,0,0|600\n" +
		`{"type":"request.finished","at":3,"model":"m","requestId":"r","finish":"stop","promptTokens":1,"cachedPromptTokens":0,"completionTokens":1,"queueMs":null,"ttftMs":150,"prefillTokensPerSecond":null,"decodeTokensPerSecond":null,"totalMs":2}`))
	f.Add([]byte("R 1 m 1 0,0.1|5,5,1|0.5\nR 2 n 9 1e15|1,8|1e15\n"))
	f.Fuzz(func(t *testing.T, input []byte) {
		s := New(1, Options{MaxModels: 8, Window: 16, Series: 16})
		for _, line := range bytes.Split(input, []byte("\n")) {
			if ev, ok := requestsLine(string(line)); ok {
				if events.Check(ev) == nil {
					s.Apply(ev)
				}
				continue
			}
			if ev, err := events.Parse(line); err == nil {
				s.Apply(ev)
			}
		}
		snap := s.Snapshot(1)
		if _, err := json.Marshal(snap); err != nil {
			t.Fatalf("snapshot does not encode: %v", err)
		}
		windows := []snapshot.Window{snap.Requests.Window}
		for _, w := range snap.Requests.Window.PerModel {
			windows = append(windows, *w)
		}
		for _, w := range windows {
			if w.Count < 0 || w.Count > 2*w.Size {
				t.Fatalf("window of %d counts %d", w.Size, w.Count)
			}
			for _, d := range []*snapshot.Distribution{w.QueueMs, w.TTFTMs, w.TotalMs, w.TPOTMs} {
				if d == nil {
					continue
				}
				order := []float64{d.Min, d.P1, d.P5, d.P50, d.P95, d.P99, d.Max}
				for i, v := range order {
					if math.IsNaN(v) || math.IsInf(v, 0) || i > 0 && v < order[i-1] {
						t.Fatalf("distribution out of order: %+v", d)
					}
				}
				if math.IsNaN(d.Mean) || math.IsInf(d.Mean, 0) || d.Count < 0 {
					t.Fatalf("distribution %+v", d)
				}
			}
		}
	})
}

// requestsLine reads "R at model finished bounds|counts|sum" as a
// requests.sample whose TTFT and end-to-end histograms are the one given.
func requestsLine(line string) (events.Event, bool) {
	f := strings.Fields(line)
	if len(f) != 5 || f[0] != "R" {
		return events.Event{}, false
	}
	at, err1 := strconv.ParseInt(f[1], 10, 64)
	finished, err2 := strconv.ParseInt(f[3], 10, 64)
	parts := strings.Split(f[4], "|")
	if err1 != nil || err2 != nil || len(parts) != 3 {
		return events.Event{}, false
	}
	h := &events.Histogram{}
	for _, b := range strings.Split(parts[0], ",") {
		v, err := strconv.ParseFloat(b, 64)
		if err != nil {
			return events.Event{}, false
		}
		h.Bounds = append(h.Bounds, v)
	}
	for _, c := range strings.Split(parts[1], ",") {
		v, err := strconv.ParseInt(c, 10, 64)
		if err != nil {
			return events.Event{}, false
		}
		h.Counts = append(h.Counts, v)
	}
	sum, err := strconv.ParseFloat(parts[2], 64)
	if err != nil {
		return events.Event{}, false
	}
	h.Sum = sum
	return events.Event{Type: events.TypeRequestsSample, At: at, Payload: &events.RequestsSample{
		Model: f[2], Finished: finished, TTFTMs: h, TotalMs: h, PromptLengths: h}}, true
}
