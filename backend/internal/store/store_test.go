package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const t0 = int64(1_764_690_000_000)

// readEvents parses an NDJSON recording.
func readEvents(t testing.TB, path string) []events.Event {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var evs []events.Event
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		ev, err := events.Parse(sc.Bytes())
		if err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// The recorded session renders, byte for byte, the golden snapshot, every
// time: the store has no clock of its own.
func TestGoldenRecording(t *testing.T) {
	evs := readEvents(t, filepath.Join("testdata", "recorded.ndjson"))
	flat := readEvents(t, filepath.Join("testdata", "recorded.flat.ndjson"))
	render := func(evs []events.Event) []byte {
		s := New(t0, Options{})
		for _, ev := range evs {
			s.Apply(ev)
		}
		out, err := json.MarshalIndent(s.Snapshot(t0+200_000), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		return append(out, '\n')
	}
	got := render(evs)
	if again := render(evs); !bytes.Equal(got, again) {
		t.Fatal("two reductions of the same recording differ")
	}
	// The host's flat form of the same session renders the same snapshot.
	if fromFlat := render(flat); !bytes.Equal(got, fromFlat) {
		t.Fatalf("the flat recording renders differently:\n%s", firstDiff(fromFlat, got))
	}
	golden := filepath.Join("testdata", "recorded.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("snapshot differs from %s (go test -update rewrites it):\n%s", golden, firstDiff(got, want))
	}

	// Spot-check the golden against the recording's story, so -update
	// cannot bless a wrong reduction unnoticed.
	var snap snapshot.Snapshot
	if err := json.Unmarshal(got, &snap); err != nil {
		t.Fatal(err)
	}
	models := map[string]snapshot.Model{}
	for _, m := range snap.Models {
		models[m.Model] = m
	}
	llama, qwen := models["llama-3.2-3b"], models["qwen2.5-7b"]
	checks := []struct {
		name      string
		got, want any
	}{
		{"models", len(snap.Models), 2},
		{"llama state", llama.State, snapshot.StateUnloaded},
		{"llama loads", llama.Loads, int64(2)},
		{"llama unloads", llama.Unloads, int64(2)},
		{"llama last unload reason", derefS(llama.LastUnloadReason), events.ReasonIdle},
		{"llama last unload ms", *llama.LastUnloadMs, 0.0},
		{"llama last load ms (from started)", *llama.LastLoadMs, 2500.0},
		{"llama last error (cleared by the load that finished after it)", llama.LastError, (*string)(nil)},
		{"models in first-seen order", snap.Models[0].Model, "llama-3.2-3b"},
		{"llama kv cleared", llama.KVBytes, int64(0)},
		{"qwen state", qwen.State, snapshot.StateResident},
		{"qwen swaps", qwen.Swaps, int64(1)},
		{"qwen swap ms", *qwen.LastSwapMs, 350.0 + 120 + 5000},
		{"qwen weights", qwen.WeightsBytes, int64(7_600_000_000)},
		{"schedulers (only resident models)", len(snap.Schedulers), 1},
		{"caches (one entry per resident model)", len(snap.Caches), 1},
		{"qwen has both caches", snap.Caches[0].KV != nil && snap.Caches[0].Prefix != nil, true},
		{"finished", snap.Requests.Finished, int64(260)},
		{"window count", snap.Requests.Window.Count, 200},
		{"recent", len(snap.Requests.Recent), 20},
		{"newest recent last", snap.Requests.Recent[19].RequestID, "req-00260"},
		{"series bound", len(snap.Series), 120},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	var byFinish int64
	for _, n := range snap.Requests.ByFinish {
		byFinish += n
	}
	if byFinish != snap.Requests.Finished {
		t.Errorf("byFinish sums to %d, finished is %d", byFinish, snap.Requests.Finished)
	}
}

func firstDiff(a, b []byte) string {
	al, bl := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := 0; i < len(al) && i < len(bl); i++ {
		if !bytes.Equal(al[i], bl[i]) {
			return fmt.Sprintf("line %d:\n got: %s\nwant: %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("lengths differ: %d vs %d lines", len(al), len(bl))
}

// builders for hand-written events

func f(v float64) *float64 { return &v }
func i64(v int64) *int64   { return &v }

func load(at int64, model, phase string, ms *float64) events.Event {
	return events.Event{Type: events.TypeModelLoad, At: at, Payload: &events.ModelLoad{Model: model, Phase: phase, Ms: ms}}
}

func unload(at int64, model, reason string, drain float64, flush *float64) events.Event {
	return events.Event{Type: events.TypeModelUnload, At: at, Payload: &events.ModelUnload{Model: model, Reason: reason, DrainMs: drain, Flushed: flush != nil, FlushMs: flush}}
}

func memory(at int64, model string, w, kv, prefix int64) events.Event {
	return events.Event{Type: events.TypeModelMemory, At: at, Payload: &events.ModelMemory{Model: model, WeightsBytes: w, KVBytes: kv, PrefixCacheBytes: prefix}}
}

func sched(at int64, model string, active, queued int, tps float64) events.Event {
	return events.Event{Type: events.TypeSchedulerSample, At: at, Payload: &events.SchedulerSample{Model: model, Active: active, Capacity: 8, Queued: queued, TokensPerSecond: tps}}
}

func cache(at int64, model string, kind events.CacheKind, bytes int64, hits, misses *int64) events.Event {
	return events.Event{Type: events.TypeCacheSample, At: at, Payload: &events.CacheSample{Model: model, Cache: kind, Bytes: bytes, Hits: hits, Misses: misses}}
}

func request(at int64, model string, finish events.FinishReason, total float64, ttft *float64) events.Event {
	return events.Event{Type: events.TypeRequestFinished, At: at, Payload: &events.RequestFinished{
		Model: model, RequestID: fmt.Sprintf("r%d", at), Finish: finish, PromptTokens: 100, CachedPromptTokens: 25,
		CompletionTokens: 10, TTFTMs: ttft, TotalMs: total}}
}

func modelOf(t *testing.T, s snapshot.Snapshot, name string) snapshot.Model {
	t.Helper()
	for _, m := range s.Models {
		if m.Model == name {
			return m
		}
	}
	t.Fatalf("no model %q in %+v", name, s.Models)
	return snapshot.Model{}
}

func TestSwaps(t *testing.T) {
	for _, tc := range []struct {
		name      string
		evs       []events.Event
		model     string
		swaps     int64
		lastSwap  *float64
		evictions int
	}{
		{
			name: "evicted then load within window",
			evs: []events.Event{
				unload(t0, "a", events.ReasonEvicted, 300, f(200)),
				load(t0+10, "b", events.PhaseStarted, nil),
				load(t0+4010, "b", events.PhaseFinished, f(4000)),
			},
			model: "b", swaps: 1, lastSwap: f(4500),
		},
		{
			name: "two evictions made room for one load",
			evs: []events.Event{
				unload(t0, "a", events.ReasonEvicted, 100, nil),
				unload(t0+100, "c", events.ReasonEvicted, 50, f(50)),
				load(t0+1200, "b", events.PhaseFinished, f(1000)),
			},
			model: "b", swaps: 1, lastSwap: f(1200),
		},
		{
			name: "load after the window is no swap",
			evs: []events.Event{
				unload(t0, "a", events.ReasonEvicted, 300, nil),
				load(t0+120_001, "b", events.PhaseFinished, f(1000)),
			},
			model: "b", swaps: 0,
		},
		{
			name: "exactly at the window edge is a swap",
			evs: []events.Event{
				unload(t0, "a", events.ReasonEvicted, 300, nil),
				load(t0+120_000, "b", events.PhaseFinished, f(1000)),
			},
			model: "b", swaps: 1, lastSwap: f(1300),
		},
		{
			name: "requested unload is no swap",
			evs: []events.Event{
				unload(t0, "a", events.ReasonRequested, 300, nil),
				load(t0+1000, "b", events.PhaseFinished, f(1000)),
			},
			model: "b", swaps: 0,
		},
		{
			name: "reloading the evicted model itself is no swap",
			evs: []events.Event{
				unload(t0, "a", events.ReasonEvicted, 300, nil),
				load(t0+1000, "a", events.PhaseFinished, f(1000)),
			},
			model: "a", swaps: 0, evictions: 1,
		},
		{
			name: "an eviction is credited once",
			evs: []events.Event{
				unload(t0, "a", events.ReasonEvicted, 300, nil),
				load(t0+1000, "b", events.PhaseFinished, f(1000)),
				load(t0+2000, "c", events.PhaseFinished, f(1000)),
			},
			model: "c", swaps: 0,
		},
		{
			name: "load time from started when ms is absent",
			evs: []events.Event{
				unload(t0, "a", events.ReasonEvicted, 300, nil),
				load(t0+500, "b", events.PhaseStarted, nil),
				load(t0+2500, "b", events.PhaseFinished, nil),
			},
			model: "b", swaps: 1, lastSwap: f(2300),
		},
		{
			name: "unknown load time leaves the swap time unknown",
			evs: []events.Event{
				unload(t0, "a", events.ReasonEvicted, 300, nil),
				load(t0+2500, "b", events.PhaseFinished, nil),
			},
			model: "b", swaps: 1, lastSwap: nil,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(t0, Options{})
			for _, ev := range tc.evs {
				s.Apply(ev)
			}
			m := modelOf(t, s.Snapshot(t0), tc.model)
			if m.Swaps != tc.swaps || !reflect.DeepEqual(m.LastSwapMs, tc.lastSwap) {
				t.Fatalf("swaps %d lastSwapMs %v, want %d %v", m.Swaps, deref(m.LastSwapMs), tc.swaps, deref(tc.lastSwap))
			}
			if len(s.evictions) != tc.evictions {
				t.Fatalf("%d evictions pending, want %d", len(s.evictions), tc.evictions)
			}
		})
	}
}

func derefS(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestLifecycle(t *testing.T) {
	for _, tc := range []struct {
		name  string
		evs   []events.Event
		check func(t *testing.T, s snapshot.Snapshot)
	}{
		{
			// The host publishes an all-zero model.memory after each
			// unload (evicted, requested or failed); a late non-zero one
			// does not bring the gone model's memory back.
			name: "the host's all-zero memory after an unload, and a stale one",
			evs: []events.Event{
				load(t0, "a", events.PhaseFinished, f(100)),
				memory(t0+1, "a", 980_000_000, 200, 30),
				unload(t0+10, "a", events.ReasonEvicted, 40, nil),
				memory(t0+10, "a", 0, 0, 0),
				memory(t0+11, "a", 980_000_000, 0, 0),
			},
			check: func(t *testing.T, s snapshot.Snapshot) {
				if a := modelOf(t, s, "a"); a.WeightsBytes != 0 || a.KVBytes != 0 || a.PrefixCacheBytes != 0 {
					t.Errorf("model a %+v, want no memory", a)
				}
			},
		},
		{
			name: "unload clears weights, kv, prefix, scheduler and caches",
			evs: []events.Event{
				load(t0, "a", events.PhaseFinished, f(100)),
				memory(t0+1, "a", 1000, 200, 30),
				sched(t0+2, "a", 3, 1, 90),
				cache(t0+3, "a", events.CacheKV, 200, nil, nil),
				cache(t0+3, "a", events.CachePrefix, 30, i64(3), i64(1)),
				load(t0+4, "b", events.PhaseFinished, f(100)),
				sched(t0+5, "b", 1, 0, 10),
				unload(t0+10, "a", events.ReasonRequested, 40, f(2)),
			},
			check: func(t *testing.T, s snapshot.Snapshot) {
				a := modelOf(t, s, "a")
				if a.State != snapshot.StateUnloaded || a.KVBytes != 0 || a.PrefixCacheBytes != 0 || a.WeightsBytes != 0 {
					t.Errorf("model a %+v", a)
				}
				if *a.LastUnloadMs != 42 || derefS(a.LastUnloadReason) != events.ReasonRequested || a.Unloads != 1 {
					t.Errorf("unload figures %+v", a)
				}
				if len(s.Schedulers) != 1 || s.Schedulers[0].Model != "b" {
					t.Errorf("schedulers %+v", s.Schedulers)
				}
				if len(s.Caches) != 0 {
					t.Errorf("caches %+v", s.Caches)
				}
			},
		},
		{
			name: "samples after unload are stale and ignored",
			evs: []events.Event{
				load(t0, "a", events.PhaseFinished, f(100)),
				unload(t0+10, "a", events.ReasonIdle, 0, nil),
				sched(t0+11, "a", 3, 1, 90),
				cache(t0+11, "a", events.CacheKV, 1, nil, nil),
				memory(t0+12, "a", 1, 2, 3),
			},
			check: func(t *testing.T, s snapshot.Snapshot) {
				if len(s.Schedulers)+len(s.Caches) != 0 || modelOf(t, s, "a").KVBytes != 0 {
					t.Errorf("stale samples applied: %+v %+v", s.Schedulers, s.Caches)
				}
				if s.Version != 2 {
					t.Errorf("version %d, want 2: ignored samples moved it", s.Version)
				}
			},
		},
		{
			name: "load failure",
			evs: []events.Event{
				load(t0, "a", events.PhaseStarted, nil),
				{Type: events.TypeModelLoad, At: t0 + 5, Payload: &events.ModelLoad{Model: "a", Phase: events.PhaseFailed, Error: "no memory"}},
			},
			check: func(t *testing.T, s snapshot.Snapshot) {
				a := modelOf(t, s, "a")
				if a.State != snapshot.StateFailed || derefS(a.LastError) != "no memory" || a.Loads != 0 {
					t.Errorf("model %+v", a)
				}
			},
		},
		{
			name: "loading while started, resident when finished",
			evs: []events.Event{
				load(t0, "a", events.PhaseStarted, nil),
			},
			check: func(t *testing.T, s snapshot.Snapshot) {
				if a := modelOf(t, s, "a"); a.State != snapshot.StateLoading || a.LastLoadMs != nil {
					t.Errorf("model %+v", a)
				}
			},
		},
		{
			name: "a model first seen in a sample is resident",
			evs:  []events.Event{sched(t0, "a", 1, 0, 5)},
			check: func(t *testing.T, s snapshot.Snapshot) {
				if a := modelOf(t, s, "a"); a.State != snapshot.StateResident {
					t.Errorf("model %+v", a)
				}
			},
		},
		{
			// The anchor lists it unloaded (docs/events.md, "Differences").
			name: "a model first seen through model.memory is resident, with its bytes",
			evs:  []events.Event{memory(t0, "a", 1000, 200, 30)},
			check: func(t *testing.T, s snapshot.Snapshot) {
				a := modelOf(t, s, "a")
				if a.State != snapshot.StateResident || a.WeightsBytes != 1000 || a.KVBytes != 200 || a.PrefixCacheBytes != 30 ||
					a.Loads != 0 || a.LastLoadMs != nil || a.UpdatedAt != t0 {
					t.Errorf("model %+v", a)
				}
				if s.Version != 1 {
					t.Errorf("version %d, want 1", s.Version)
				}
			},
		},
		{
			// The anchor counts the request and lists no row (docs/events.md).
			name: "a request.finished for a model never seen counts, and lists the model resident",
			evs:  []events.Event{request(t0, "a", events.FinishStop, 50, f(10))},
			check: func(t *testing.T, s snapshot.Snapshot) {
				a := modelOf(t, s, "a")
				if a.State != snapshot.StateResident || a.Loads != 0 || a.LastLoadMs != nil || a.WeightsBytes != 0 {
					t.Errorf("model %+v", a)
				}
				if s.Requests.Finished != 1 || s.Requests.ByFinish[events.FinishStop] != 1 || s.Requests.Window.Count != 1 {
					t.Errorf("requests %+v", s.Requests)
				}
				if w := s.Requests.Window.PerModel["a"]; w == nil || w.Count != 1 {
					t.Errorf("per-model window %+v", w)
				}
				if len(s.Requests.Recent) != 1 || s.Requests.Recent[0].Model != "a" {
					t.Errorf("recent %+v", s.Requests.Recent)
				}
			},
		},
		{
			name: "a failed unload leaves the model failed",
			evs: []events.Event{
				load(t0, "a", events.PhaseFinished, f(1)),
				unload(t0+1, "a", events.ReasonFailed, 0, nil),
			},
			check: func(t *testing.T, s snapshot.Snapshot) {
				if a := modelOf(t, s, "a"); a.State != snapshot.StateFailed || derefS(a.LastUnloadReason) != events.ReasonFailed {
					t.Errorf("model %+v", a)
				}
			},
		},
		{
			name: "prefix hit rate, null before any lookup",
			evs: []events.Event{
				cache(t0, "a", events.CachePrefix, 10, i64(0), i64(0)),
				cache(t0, "b", events.CachePrefix, 10, i64(3), i64(1)),
				cache(t0, "c", events.CacheKV, 10, nil, nil),
			},
			check: func(t *testing.T, s snapshot.Snapshot) {
				want := map[string]any{"a": nil, "b": 0.75}
				for _, c := range s.Caches {
					if c.Prefix == nil {
						if c.Model != "c" || c.KV == nil {
							t.Errorf("%s: no prefix reading %+v", c.Model, c)
						}
						continue
					}
					if got := deref(c.Prefix.HitRate); got != want[c.Model] {
						t.Errorf("%s hitRate %v, want %v", c.Model, got, want[c.Model])
					}
				}
			},
		},
		{
			name: "an out-of-order sample does not replace a newer one",
			evs: []events.Event{
				sched(t0+10, "a", 5, 0, 50),
				sched(t0+5, "a", 1, 0, 10),
			},
			check: func(t *testing.T, s snapshot.Snapshot) {
				if s.Schedulers[0].Active != 5 || s.Schedulers[0].At != t0+10 {
					t.Errorf("scheduler %+v", s.Schedulers[0])
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(t0, Options{})
			for _, ev := range tc.evs {
				s.Apply(ev)
			}
			tc.check(t, s.Snapshot(t0))
		})
	}
}

func TestIgnoredTypesDoNotChangeVersion(t *testing.T) {
	s := New(t0, Options{})
	for _, typ := range []events.Type{"catalog.changed", "job.state", "metrics.custom", "bench.progress"} {
		if s.Apply(events.Event{Type: typ, At: t0}) {
			t.Errorf("%s changed the store", typ)
		}
	}
	if s.Version() != 0 {
		t.Fatalf("version %d", s.Version())
	}
	if s.Apply(memory(t0, "a", 1, 2, 3)); s.Version() != 1 {
		t.Fatalf("version %d after a change", s.Version())
	}
	if s.Apply(memory(t0, "a", 1, 2, 3)) || s.Version() != 1 {
		t.Fatalf("a repeated identical sample moved the version to %d", s.Version())
	}
}

// A sample delivered twice changes nothing the second time; one that
// differs at the same at replaces the first.
func TestRepeatedSamples(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   func() events.Event // a fresh decoding each call: no shared pointers
		diff events.Event
	}{
		{"scheduler", func() events.Event { return sched(t0, "a", 2, 1, 50) }, sched(t0, "a", 2, 1, 51)},
		{"kv cache", func() events.Event { return cache(t0, "a", events.CacheKV, 10, nil, nil) }, cache(t0, "a", events.CacheKV, 11, nil, nil)},
		{"prefix cache", func() events.Event { return cache(t0, "a", events.CachePrefix, 10, i64(3), i64(1)) }, cache(t0, "a", events.CachePrefix, 10, i64(3), i64(2))},
		{"memory", func() events.Event { return memory(t0, "a", 1, 2, 3) }, memory(t0, "a", 1, 2, 4)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(t0, Options{})
			if !s.Apply(tc.ev()) {
				t.Fatal("the first sample changed nothing")
			}
			v := s.Version()
			before, _ := json.Marshal(s.Snapshot(t0))
			if s.Apply(tc.ev()) || s.Version() != v {
				t.Fatalf("the repeat moved the version from %d to %d", v, s.Version())
			}
			if after, _ := json.Marshal(s.Snapshot(t0)); !bytes.Equal(before, after) {
				t.Fatalf("the repeat changed the snapshot:\n%s\n%s", before, after)
			}
			if !s.Apply(tc.diff) || s.Version() != v+1 {
				t.Fatalf("a different sample at the same at did not move the version (%d)", s.Version())
			}
		})
	}
}

// A load or unload delivered twice (same model, at, phase or reason) is
// counted once and does not move the version; the same phase at another
// instant is a new event.
func TestRepeatedLifecycleEvents(t *testing.T) {
	failed := events.Event{Type: events.TypeModelLoad, At: t0 + 2, Payload: &events.ModelLoad{Model: "a", Phase: events.PhaseFailed, Error: "oom"}}
	for _, tc := range []struct {
		name           string
		before         []events.Event
		ev             events.Event
		loads, unloads int64
		swaps          int64
		pendingEvicted int
	}{
		{name: "load started", ev: load(t0, "a", events.PhaseStarted, nil)},
		{name: "load finished", ev: load(t0, "a", events.PhaseFinished, f(10)), loads: 1},
		{name: "load failed", ev: failed},
		{name: "unload", before: []events.Event{load(t0, "a", events.PhaseFinished, f(10))},
			ev: unload(t0+1, "a", events.ReasonIdle, 5, nil), loads: 1, unloads: 1},
		{name: "eviction", before: []events.Event{load(t0, "a", events.PhaseFinished, f(10))},
			ev: unload(t0+1, "a", events.ReasonEvicted, 5, nil), loads: 1, unloads: 1, pendingEvicted: 1},
		{name: "swap-completing load", before: []events.Event{unload(t0, "b", events.ReasonEvicted, 5, nil)},
			ev: load(t0+1, "a", events.PhaseFinished, f(10)), loads: 1, swaps: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(t0, Options{})
			for _, ev := range tc.before {
				s.Apply(ev)
			}
			if !s.Apply(tc.ev) {
				t.Fatal("the first delivery changed nothing")
			}
			v := s.Version()
			if s.Apply(tc.ev) || s.Version() != v {
				t.Fatalf("the repeat moved the version from %d to %d", v, s.Version())
			}
			a := modelOf(t, s.Snapshot(t0), "a")
			if a.Loads != tc.loads || a.Unloads != tc.unloads || a.Swaps != tc.swaps || len(s.evictions) != tc.pendingEvicted {
				t.Fatalf("loads %d unloads %d swaps %d evictions %d, want %d %d %d %d",
					a.Loads, a.Unloads, a.Swaps, len(s.evictions), tc.loads, tc.unloads, tc.swaps, tc.pendingEvicted)
			}
			later := tc.ev
			later.At += 1000
			if !s.Apply(later) {
				t.Fatal("the same phase at a later instant changed nothing")
			}
		})
	}
}

func TestRequestWindowBounds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		window   int
		recent   int
		requests int
	}{
		{"empty", 5, 3, 0},
		{"under", 5, 3, 2},
		{"exactly full", 5, 3, 5},
		{"overflowing", 5, 3, 12},
		{"defaults", 0, 0, 250},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(t0, Options{Window: tc.window, Recent: tc.recent})
			for i := 1; i <= tc.requests; i++ {
				// totalMs = i, so the window holds the last Window values.
				s.Apply(request(t0+int64(i), "a", events.FinishStop, float64(i), nil))
			}
			o := s.Options()
			snap := s.Snapshot(t0)
			w := snap.Requests.Window
			wantCount := min(tc.requests, o.Window)
			if w.Size != o.Window || w.Count != wantCount {
				t.Fatalf("window size %d count %d, want %d %d", w.Size, w.Count, o.Window, wantCount)
			}
			if len(snap.Requests.Recent) != min(tc.requests, o.Recent) {
				t.Fatalf("%d recent", len(snap.Requests.Recent))
			}
			if tc.requests == 0 {
				if w.TotalMs != nil || w.CachedPromptShare != nil || w.PerModel != nil {
					t.Fatalf("empty window reports %+v", w)
				}
				return
			}
			if got := snap.Requests.Recent[len(snap.Requests.Recent)-1].At; got != t0+int64(tc.requests) {
				t.Fatalf("newest recent at %d is not last", got)
			}
			first := tc.requests - wantCount + 1
			if w.TotalMs.Count != wantCount || w.TotalMs.Max != float64(tc.requests) {
				t.Fatalf("totalMs %+v", w.TotalMs)
			}
			if want := float64(first+tc.requests) / 2; w.TotalMs.Mean != want {
				t.Fatalf("mean %v, want %v", w.TotalMs.Mean, want)
			}
			if w.TTFTMs != nil {
				t.Fatalf("all-null ttft reported as %+v", w.TTFTMs)
			}
			if *w.CachedPromptShare != 0.25 {
				t.Fatalf("cached share %v", *w.CachedPromptShare)
			}
			if pm := w.PerModel["a"]; pm == nil || pm.Count != wantCount {
				t.Fatalf("per-model window %+v", pm)
			}
			if snap.Requests.Finished != int64(tc.requests) || snap.Requests.ByFinish[events.FinishStop] != int64(tc.requests) {
				t.Fatalf("finished %d byFinish %v", snap.Requests.Finished, snap.Requests.ByFinish)
			}
		})
	}
}

func TestDistribution(t *testing.T) {
	seq := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(n - i) // reversed: the window must sort
		}
		return v
	}
	for _, tc := range []struct {
		name string
		vals []float64
		want *snapshot.Distribution
	}{
		{"none", nil, nil},
		{"one", []float64{7}, &snapshot.Distribution{Count: 1, Mean: 7, P50: 7, P95: 7, P99: 7, Max: 7, Min: 7, P1: 7, P5: 7}},
		{"two", []float64{10, 20}, &snapshot.Distribution{Count: 2, Mean: 15, P50: 10, P95: 20, P99: 20, Max: 20, Min: 10, P1: 10, P5: 10}},
		{"1..100", seq(100), &snapshot.Distribution{Count: 100, Mean: 50.5, P50: 50, P95: 95, P99: 99, Max: 100, Min: 1, P1: 1, P5: 5}},
		{"1..200", seq(200), &snapshot.Distribution{Count: 200, Mean: 100.5, P50: 100, P95: 190, P99: 198, Max: 200, Min: 1, P1: 2, P5: 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Through a window, in the order given: the window keeps them
			// sorted.
			w := newRequestWindow(200)
			for _, v := range tc.vals {
				w.add(requestRecord{queueMs: null, ttftMs: null, prefill: null, decode: null, tpotMs: null, totalMs: v})
			}
			if got := w.summary().TotalMs; !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSeries(t *testing.T) {
	const sec = int64(1000)
	pt := func(at int64, tps float64, active, capacity, queued int) snapshot.SeriesPoint {
		return snapshot.SeriesPoint{At: at, TokensPerSecond: tps, Active: active, Capacity: capacity, Queued: queued}
	}
	for _, tc := range []struct {
		name string
		max  int
		evs  []events.Event
		want []snapshot.SeriesPoint
	}{
		{
			name: "models sampled in one second are summed",
			max:  10,
			evs:  []events.Event{sched(t0+100, "a", 1, 2, 10), sched(t0+900, "b", 3, 4, 30), sched(t0+sec, "a", 1, 0, 5)},
			// b's sample is carried to the next second's point.
			want: []snapshot.SeriesPoint{pt(t0+900, 40, 4, 16, 6), pt(t0+sec, 35, 4, 16, 4)},
		},
		{
			name: "a repeated sample replaces the model's share",
			max:  10,
			evs:  []events.Event{sched(t0, "a", 1, 0, 10), sched(t0, "a", 2, 0, 20)},
			want: []snapshot.SeriesPoint{pt(t0, 20, 2, 8, 0)},
		},
		{
			name: "a model's samples in one second: their mean rate, the latest gauges",
			max:  10,
			evs:  []events.Event{sched(t0+100, "a", 1, 0, 10), sched(t0+600, "a", 3, 1, 20)},
			want: []snapshot.SeriesPoint{pt(t0+600, 15, 3, 8, 1)},
		},
		{
			name: "engines sampled at their own moments each count on every point",
			max:  10,
			evs: []events.Event{sched(t0, "a", 1, 0, 10), sched(t0+sec, "b", 1, 0, 30), sched(t0+2*sec, "a", 1, 0, 12),
				sched(t0+3*sec, "b", 1, 0, 28)},
			want: []snapshot.SeriesPoint{pt(t0, 10, 1, 8, 0), pt(t0+sec, 40, 2, 16, 0), pt(t0+2*sec, 42, 2, 16, 0), pt(t0+3*sec, 40, 2, 16, 0)},
		},
		{
			name: "a sample is carried for twice its model's gap, no longer",
			max:  10,
			evs: []events.Event{sched(t0, "a", 1, 0, 10), sched(t0+sec, "a", 1, 0, 10), sched(t0+2*sec, "b", 1, 0, 1),
				sched(t0+3*sec, "b", 1, 0, 1), sched(t0+4*sec, "b", 1, 0, 1)},
			want: []snapshot.SeriesPoint{pt(t0, 10, 1, 8, 0), pt(t0+sec, 10, 1, 8, 0), pt(t0+2*sec, 11, 2, 16, 0),
				pt(t0+3*sec, 11, 2, 16, 0), pt(t0+4*sec, 1, 1, 8, 0)},
		},
		{
			name: "no sample is carried past its model's unload",
			max:  10,
			evs: []events.Event{sched(t0, "a", 1, 0, 10), sched(t0+sec, "b", 1, 0, 1), unload(t0+1500, "a", events.ReasonEvicted, 1, nil),
				sched(t0+2*sec, "b", 1, 0, 1)},
			want: []snapshot.SeriesPoint{pt(t0, 10, 1, 8, 0), pt(t0+sec, 11, 2, 16, 0), pt(t0+2*sec, 1, 1, 8, 0)},
		},
		{
			name: "an unload that comes late takes the model off the points after it",
			max:  10,
			evs: []events.Event{sched(t0, "a", 1, 0, 10), sched(t0+sec, "b", 1, 0, 1), sched(t0+2*sec, "b", 1, 0, 1),
				unload(t0+1500, "a", events.ReasonIdle, 1, nil)},
			want: []snapshot.SeriesPoint{pt(t0, 10, 1, 8, 0), pt(t0+sec, 11, 2, 16, 0), pt(t0+2*sec, 1, 1, 8, 0)},
		},
		{
			name: "bounded, oldest dropped",
			max:  3,
			evs: []events.Event{sched(t0+sec, "a", 1, 0, 1), sched(t0+2*sec, "a", 1, 0, 2), sched(t0+3*sec, "a", 1, 0, 3),
				sched(t0+4*sec, "a", 1, 0, 4)},
			want: []snapshot.SeriesPoint{pt(t0+2*sec, 2, 1, 8, 0), pt(t0+3*sec, 3, 1, 8, 0), pt(t0+4*sec, 4, 1, 8, 0)},
		},
		{
			name: "a late sample lands in time order and is carried to the points after it",
			max:  4,
			evs: []events.Event{sched(t0+sec, "a", 1, 0, 1), sched(t0+3*sec, "a", 1, 0, 3), sched(t0+sec, "b", 1, 0, 10),
				sched(t0+2*sec, "b", 1, 0, 2), sched(t0, "c", 1, 0, 99)},
			// c's one sample (its gap unknown: carried two seconds) counts
			// on the two points after it.
			want: []snapshot.SeriesPoint{pt(t0, 99, 1, 8, 0), pt(t0+sec, 110, 3, 24, 0), pt(t0+2*sec, 102, 3, 24, 0), pt(t0+3*sec, 5, 2, 16, 0)},
		},
		{
			name: "older than every point of a full series",
			max:  2,
			evs:  []events.Event{sched(t0+sec, "a", 1, 0, 1), sched(t0+2*sec, "a", 1, 0, 2), sched(t0, "b", 1, 0, 7)},
			want: []snapshot.SeriesPoint{pt(t0+sec, 1, 1, 8, 0), pt(t0+2*sec, 2, 1, 8, 0)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(t0, Options{Series: tc.max})
			for _, ev := range tc.evs {
				s.Apply(ev)
			}
			if got := s.Snapshot(t0).Series; !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// A long run keeps the series bounded and ordered across the compactions.
func TestSeriesLongRun(t *testing.T) {
	s := New(t0, Options{Series: 7})
	for i := int64(1); i <= 1000; i++ {
		s.Apply(sched(t0+1000*i, "a", 1, 0, float64(i)))
	}
	got := s.Snapshot(t0).Series
	if len(got) != 7 {
		t.Fatalf("%d points", len(got))
	}
	for k, p := range got {
		if want := t0 + 1000*(994+int64(k)); p.At != want {
			t.Fatalf("point %d at %d, want %d", k, p.At, want)
		}
	}
}

func TestMaxModels(t *testing.T) {
	s := New(t0, Options{MaxModels: 2})
	for i := 0; i < 5; i++ {
		s.Apply(memory(t0, fmt.Sprintf("m%d", i), 1, 1, 1))
		s.Apply(request(t0, fmt.Sprintf("m%d", i), events.FinishStop, 1, nil))
	}
	snap := s.Snapshot(t0)
	if len(snap.Models) != 2 || len(snap.Requests.Window.PerModel) != 2 {
		t.Fatalf("%d models, %d per-model windows", len(snap.Models), len(snap.Requests.Window.PerModel))
	}
	if snap.Requests.Finished != 5 {
		t.Fatalf("requests of untracked models not counted: %d", snap.Requests.Finished)
	}
}

// A snapshot is a copy: later events do not change it.
func TestSnapshotIsACopy(t *testing.T) {
	s := New(t0, Options{})
	s.Apply(sched(t0, "a", 1, 0, 10))
	s.Apply(request(t0, "a", events.FinishStop, 5, f(1)))
	before, _ := json.Marshal(s.Snapshot(t0))
	snap := s.Snapshot(t0)
	s.Apply(sched(t0+1, "a", 2, 0, 20))
	s.Apply(request(t0+1, "a", events.FinishLength, 6, f(2)))
	after, _ := json.Marshal(snap)
	if !bytes.Equal(before, after) {
		t.Fatalf("snapshot changed under later events:\n%s\n%s", before, after)
	}
}

// mixedEvents is a realistic blend: mostly requests and scheduler samples.
func mixedEvents(n int) []events.Event {
	models := []string{"llama-3.2-3b", "qwen2.5-7b", "mistral-7b"}
	evs := make([]events.Event, 0, n)
	for i := 0; len(evs) < n; i++ {
		m := models[i%len(models)]
		at := t0 + int64(i)
		switch i % 8 {
		case 0, 1, 2, 3:
			evs = append(evs, request(at, m, events.FinishStop, float64(i%997), f(float64(i%89))))
		case 4, 5:
			evs = append(evs, sched(at, m, i%8, i%3, float64(i%500)))
		case 6:
			evs = append(evs, cache(at, m, events.CachePrefix, int64(i), i64(int64(i)), i64(int64(i/2))))
		case 7:
			evs = append(evs, memory(at, m, 1<<30, int64(i), int64(i/2)))
		}
	}
	return evs
}

// churnEvents is a host cycling through many models: each loads, serves a
// few requests with samples, and is evicted for the next.
func churnEvents(n, models int) []events.Event {
	evs := make([]events.Event, 0, n)
	for i := 0; len(evs) < n; i++ {
		m := fmt.Sprintf("org/model-%04d", i%models)
		at := t0 + int64(i)*10
		evs = append(evs,
			load(at, m, events.PhaseStarted, nil),
			load(at+1, m, events.PhaseFinished, f(1200)),
			sched(at+2, m, 2, 0, 100),
			cache(at+3, m, events.CacheKV, 1<<20, nil, nil),
			request(at+4, m, events.FinishStop, 500, f(40)),
			request(at+5, m, events.FinishLength, 900, f(60)),
			unload(at+6, m, events.ReasonEvicted, 3, nil),
		)
	}
	return evs[:n]
}

// BenchmarkApply folds a recorded mix over and over with time moving
// forward (each lap is shifted past the one before), so no sample is stale
// and the figure is what a live stream costs.
// Applying an event allocates nothing once the store is warm: the rings,
// windows and the series reuse what they drop (a series point's shares
// too). A serving mix, replayed lap after lap with time moving forward.
func TestApplyAllocatesNothing(t *testing.T) {
	evs := mixedEvents(1 << 12)
	span := evs[len(evs)-1].At - evs[0].At + 1
	s := New(t0, Options{})
	// Warm: every ring and window full and dropping, and the timeline gone
	// round once, so each of its intervals has made its histograms.
	var lap int64
	for ; lap*span < 2*DefaultTimeline*DefaultIntervalMs; lap++ {
		for _, ev := range evs {
			ev.At += lap * span
			s.Apply(ev)
		}
	}
	// One run is a whole lap: AllocsPerRun truncates its average, so an
	// allocation every few events would read 0 per event.
	allocs := testing.AllocsPerRun(4, func() {
		for _, ev := range evs {
			ev.At += lap * span
			s.Apply(ev)
		}
		lap++
	})
	if allocs != 0 {
		t.Errorf("%v allocations in a lap of %d events, want 0", allocs, len(evs))
	}
}

func BenchmarkApply(b *testing.B) {
	for _, mix := range []struct {
		name string
		evs  []events.Event
	}{
		{"serving", mixedEvents(1 << 16)},
		{"model-churn", churnEvents(1<<16, 2000)},
	} {
		b.Run(mix.name, func(b *testing.B) {
			evs := mix.evs
			span := evs[len(evs)-1].At - evs[0].At + 1
			s := New(t0, Options{})
			for _, ev := range evs {
				s.Apply(ev)
			}
			b.ReportAllocs()
			i, lap := 0, int64(1)
			for b.Loop() {
				ev := evs[i]
				ev.At += lap * span
				s.Apply(ev)
				if i++; i == len(evs) {
					i, lap = 0, lap+1
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

func BenchmarkSnapshot(b *testing.B) {
	s := New(t0, Options{})
	for _, ev := range mixedEvents(10_000) {
		s.Apply(ev)
	}
	b.Run("build", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = s.Snapshot(t0)
		}
	})
	// Encoded as live encodes: into a buffer sized from the last
	// snapshot, allocated once (a frame is shared and never reused).
	encode := func(snap *snapshot.Snapshot, last int) []byte {
		out, _ := snapshot.AppendJSON(make([]byte, 0, last+last/8+512), snap)
		return out
	}
	b.Run("build+encode", func(b *testing.B) {
		b.ReportAllocs()
		var size int
		for b.Loop() {
			snap := s.Snapshot(t0)
			size = len(encode(&snap, size))
		}
		b.ReportMetric(float64(size), "bytes")
	})
	// The stream's case: an event between snapshots, so the window it
	// lands in is summarised again.
	b.Run("request+build+encode", func(b *testing.B) {
		b.ReportAllocs()
		evs := mixedEvents(4096)
		at := evs[len(evs)-1].At
		i, size := 0, 0
		for b.Loop() {
			at++
			s.Apply(request(at, "llama-3.2-3b", events.FinishStop, float64(i%997), f(float64(i%89))))
			snap := s.Snapshot(t0)
			size = len(encode(&snap, size))
			i++
		}
	})
	b.Run("build+encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(s.Snapshot(t0)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A flood of invented model names must not keep a real one out: idle
// models that never loaded are forgotten, least recently named first.
func TestModelBoundEvictsIdleNeverLoaded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		evs      func() []events.Event
		present  []string
		absent   []string
		evicted  uint64
		nModels  int
		firstTwo []string
	}{
		{
			name: "a real load after a name flood gets in",
			evs: func() []events.Event {
				evs := []events.Event{load(t0, "real-a", events.PhaseFinished, f(1))}
				for i := range 10 {
					evs = append(evs, sched(t0+1+int64(i), fmt.Sprintf("junk-%d", i), 1, 0, 1))
				}
				return append(evs, load(t0+100, "real-b", events.PhaseFinished, f(1)))
			},
			present: []string{"real-a", "real-b", "junk-9"},
			absent:  []string{"junk-0", "junk-7"},
			evicted: 8, nModels: 4,
			firstTwo: []string{"real-a", "junk-8"},
		},
		{
			name: "the least recently named junk goes first",
			evs: func() []events.Event {
				return []events.Event{
					sched(t0, "junk-old", 1, 0, 1),
					sched(t0+1, "junk-new", 1, 0, 1),
					sched(t0+2, "junk-old", 2, 0, 1), // named again: now the newer
					load(t0+3, "l1", events.PhaseFinished, f(1)),
					load(t0+4, "l2", events.PhaseFinished, f(1)),
					load(t0+5, "l3", events.PhaseFinished, f(1)),
				}
			},
			present: []string{"junk-old", "l1", "l2", "l3"},
			absent:  []string{"junk-new"},
			evicted: 1, nModels: 4,
			firstTwo: []string{"junk-old", "l1"},
		},
		{
			name: "with no never-loaded model, the least recently named unloaded one goes",
			evs: func() []events.Event {
				return []events.Event{
					load(t0, "l1", events.PhaseFinished, f(1)),
					load(t0+1, "l2", events.PhaseFinished, f(1)),
					unload(t0+2, "l2", events.ReasonIdle, 0, nil),
					load(t0+3, "l3", events.PhaseFinished, f(1)),
					unload(t0+4, "l3", events.ReasonIdle, 0, nil),
					load(t0+5, "l4", events.PhaseFinished, f(1)),
					load(t0+6, "l5", events.PhaseFinished, f(1)),
				}
			},
			present: []string{"l1", "l3", "l4", "l5"},
			absent:  []string{"l2"},
			evicted: 1, nModels: 4,
			firstTwo: []string{"l1", "l3"},
		},
		{
			name: "resident and reloading models are never evicted: the newcomer is refused",
			evs: func() []events.Event {
				return []events.Event{
					load(t0, "l1", events.PhaseFinished, f(1)),
					load(t0+1, "l2", events.PhaseFinished, f(1)),
					load(t0+2, "l3", events.PhaseFinished, f(1)),
					unload(t0+3, "l3", events.ReasonIdle, 0, nil),
					load(t0+4, "l3", events.PhaseStarted, nil), // loaded before: loading again
					load(t0+5, "l4", events.PhaseFinished, f(1)),
					load(t0+6, "l5", events.PhaseFinished, f(1)),
				}
			},
			present: []string{"l1", "l2", "l3", "l4"},
			absent:  []string{"l5"},
			evicted: 0, nModels: 4,
			firstTwo: []string{"l1", "l2"},
		},
		{
			name: "a flood of loads that never finish, or fail, makes way for a real load",
			evs: func() []events.Event {
				evs := []events.Event{load(t0, "real-a", events.PhaseFinished, f(1))}
				for i := range 10 {
					phase := events.PhaseStarted
					if i%2 == 1 {
						phase = events.PhaseFailed
					}
					evs = append(evs, load(t0+1+int64(i), fmt.Sprintf("junk-%d", i), phase, nil))
				}
				return append(evs,
					load(t0+100, "real-b", events.PhaseStarted, nil),
					load(t0+101, "real-b", events.PhaseFinished, f(1)),
					sched(t0+102, "real-b", 1, 0, 1))
			},
			present: []string{"real-a", "real-b", "junk-9"},
			absent:  []string{"junk-0", "junk-1", "junk-7"},
			evicted: 8, nModels: 4,
			firstTwo: []string{"real-a", "junk-8"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(t0, Options{MaxModels: 4})
			for _, ev := range tc.evs() {
				s.Apply(ev)
			}
			snap := s.Snapshot(t0)
			names := map[string]bool{}
			for _, m := range snap.Models {
				names[m.Model] = true
			}
			for _, n := range tc.present {
				if !names[n] {
					t.Errorf("%s missing from %v", n, names)
				}
			}
			for _, n := range tc.absent {
				if names[n] {
					t.Errorf("%s still present", n)
				}
			}
			if len(snap.Models) != tc.nModels || s.Evicted() != tc.evicted {
				t.Errorf("%d models, %d evicted; want %d, %d", len(snap.Models), s.Evicted(), tc.nModels, tc.evicted)
			}
			if snap.Models[0].Model != tc.firstTwo[0] || snap.Models[1].Model != tc.firstTwo[1] {
				t.Errorf("order %v, want first %v", snap.Models, tc.firstTwo)
			}
			for _, sc := range snap.Schedulers {
				if !names[sc.Model] {
					t.Errorf("scheduler row of a forgotten model %s", sc.Model)
				}
			}
		})
	}
}

// The anchor's rules on a load's time: finished without ms takes the time
// since its started, and without that is unknown (never the previous load's).
func TestLastLoadMs(t *testing.T) {
	for _, tc := range []struct {
		name string
		evs  []events.Event
		want any
	}{
		{"ms given", []events.Event{load(t0, "a", events.PhaseFinished, f(7))}, 7.0},
		{"from started", []events.Event{load(t0, "a", events.PhaseStarted, nil), load(t0+250, "a", events.PhaseFinished, nil)}, 250.0},
		{"unknown after a known one", []events.Event{load(t0, "a", events.PhaseFinished, f(7)), load(t0+10, "a", events.PhaseFinished, nil)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(t0, Options{})
			for _, ev := range tc.evs {
				s.Apply(ev)
			}
			if got := deref(modelOf(t, s.Snapshot(t0), "a").LastLoadMs); got != tc.want {
				t.Errorf("lastLoadMs %v, want %v", got, tc.want)
			}
		})
	}
}

// The window's orders, brought up to date request by request or sorted
// afresh, give the summary that sorting its records gives, whatever number
// of requests comes between two summaries, as the oldest go and the window
// is reused.
func TestWindowKeepsOrder(t *testing.T) {
	pool := []float64{0, 0, 1, 1, 2.5, 1e9, 5e-324, null, null}
	for _, size := range []int{1, 3, 16, 200} {
		t.Run(fmt.Sprint("size ", size), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(size)))
			pick := func() float64 { return pool[rng.IntN(len(pool))] }
			w := newRequestWindow(size)
			var recs []requestRecord
			next := 1 // summarise after this many more adds
			for i := range 3000 {
				if i == 1700 {
					w.reset()
					recs = recs[:0]
				}
				r := requestRecord{queueMs: pick(), ttftMs: pick(), prefill: pick(), decode: pick(), totalMs: pick(), tpotMs: pick(),
					promptTokens: rng.Int64N(1000), cachedPromptTokens: rng.Int64N(10)}
				w.add(r)
				if recs = append(recs, r); len(recs) > size {
					recs = recs[1:]
				}
				if next--; next > 0 {
					continue
				}
				next = 1 + rng.IntN(2*incrementalLimit+2)
				if got, want := windowText(w.summary()), windowText(summariseBySorting(recs, size)); got != want {
					t.Fatalf("after %d adds:\n got %s\nwant %s", i+1, got, want)
				}
			}
		})
	}
}

// summariseBySorting is a window's summary the plain way: each timing's
// values copied out and sorted.
func summariseBySorting(recs []requestRecord, size int) snapshot.Window {
	out := snapshot.Window{Size: size, Count: len(recs)}
	dists := [numTimings]**snapshot.Distribution{&out.QueueMs, &out.TTFTMs, &out.PrefillTokensPerSecond,
		&out.DecodeTokensPerSecond, &out.TotalMs, &out.TPOTMs}
	var prompt, cached int64
	for i, d := range dists {
		var vals []float64
		for _, r := range recs {
			if v := r.timings()[i]; !math.IsNaN(v) {
				vals = append(vals, v)
			}
		}
		sort.Float64s(vals)
		*d = distribution(vals)
	}
	for _, r := range recs {
		prompt += r.promptTokens
		cached += r.cachedPromptTokens
	}
	if prompt > 0 {
		share := float64(cached) / float64(prompt)
		out.CachedPromptShare = &share
	}
	return out
}

// A timing of -0 is kept (and so reported) as 0.
func TestRequestRecordHasNoNegativeZero(t *testing.T) {
	negZero := math.Copysign(0, -1)
	r := newRequestRecord(&events.RequestFinished{TotalMs: negZero, TTFTMs: &negZero, QueueMs: &negZero, DecodeTokensPerSecond: &negZero})
	for i, v := range r.timings() {
		if math.Signbit(v) {
			t.Errorf("timing %d is -0", i)
		}
	}
}

// windowText prints every figure of w, -0 as -0.
func windowText(w snapshot.Window) string {
	d := func(x *snapshot.Distribution) string {
		if x == nil {
			return "nil"
		}
		return fmt.Sprint(*x)
	}
	share := "nil"
	if w.CachedPromptShare != nil {
		share = fmt.Sprint(*w.CachedPromptShare)
	}
	return fmt.Sprint(w.Size, w.Count, d(w.QueueMs), d(w.TTFTMs), d(w.PrefillTokensPerSecond), d(w.DecodeTokensPerSecond),
		d(w.TotalMs), d(w.TPOTMs), share)
}
