package live

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// The anchor's MetricsSnapshot (protocol.ts of the original TypeScript
// module), field for field, plus exactly the additions the snapshot
// package documents (marked "addition"). A field the anchor types
// "T | null" is a pointer here and must be present, null or not.
type anchorSnapshot struct {
	At         int64             `json:"at"`
	StartedAt  int64             `json:"startedAt"`
	Version    uint64            `json:"version"` // addition
	Models     []anchorModel     `json:"models"`
	Schedulers []anchorScheduler `json:"schedulers"`
	Caches     []anchorCaches    `json:"caches"`
	Requests   struct {
		Finished int64            `json:"finished"`
		ByFinish map[string]int64 `json:"byFinish"`
		Window   anchorWindow     `json:"window"`
		Recent   []anchorRequest  `json:"recent"`
	} `json:"requests"`
	Series []struct {
		At              int64   `json:"at"`
		TokensPerSecond float64 `json:"tokensPerSecond"`
		Active          int     `json:"active"`
		Capacity        int     `json:"capacity"` // addition
		Queued          int     `json:"queued"`
	} `json:"series"`
	Timeline   []snapshot.TimelinePoint `json:"timeline"`          // addition
	IntervalMs int64                    `json:"intervalMs"`        // addition
	Marks      []snapshot.ModelMark     `json:"marks"`             // addition
	Sources    []snapshot.Source        `json:"sources,omitempty"` // addition, absent when none is followed
}

type anchorModel struct {
	Model            string   `json:"model"`
	State            string   `json:"state"`
	Loads            int64    `json:"loads"`
	Unloads          int64    `json:"unloads"`
	LastLoadMs       *float64 `json:"lastLoadMs"`
	LastUnloadMs     *float64 `json:"lastUnloadMs"`
	LastUnloadReason *string  `json:"lastUnloadReason"`
	LastSwapMs       *float64 `json:"lastSwapMs"`
	Swaps            int64    `json:"swaps"`
	WeightsBytes     int64    `json:"weightsBytes"`
	KVBytes          int64    `json:"kvBytes"`
	PrefixCacheBytes int64    `json:"prefixCacheBytes"`
	LastError        *string  `json:"lastError"`
	UpdatedAt        int64    `json:"updatedAt"` // addition
}

type anchorScheduler struct {
	Model           string  `json:"model"`
	At              int64   `json:"at"`
	Active          int     `json:"active"`
	Capacity        int     `json:"capacity"`
	Queued          int     `json:"queued"`
	TokensPerSecond float64 `json:"tokensPerSecond"`
}

type anchorCaches struct {
	Model string `json:"model"`
	KV    *struct {
		At            int64    `json:"at"`
		Bytes         int64    `json:"bytes"`
		CapacityBytes *int64   `json:"capacityBytes"`
		UsageRatio    *float64 `json:"usageRatio,omitempty"` // addition
	} `json:"kv"`
	Prefix *struct {
		At            int64    `json:"at"`
		Bytes         int64    `json:"bytes"`
		CapacityBytes *int64   `json:"capacityBytes"`
		Hits          int64    `json:"hits"`
		Misses        int64    `json:"misses"`
		HitRate       *float64 `json:"hitRate"`
		UsageRatio    *float64 `json:"usageRatio,omitempty"` // addition
	} `json:"prefix"`
}

type anchorDistribution struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"` // addition
	Max   float64 `json:"max"`
	Min   float64 `json:"min"` // addition
	P1    float64 `json:"p1"`  // addition
	P5    float64 `json:"p5"`  // addition
}

type anchorWindow struct {
	Size                   int                      `json:"size"` // addition
	Count                  int                      `json:"count"`
	QueueMs                *anchorDistribution      `json:"queueMs"`
	TTFTMs                 *anchorDistribution      `json:"ttftMs"`
	PrefillTokensPerSecond *anchorDistribution      `json:"prefillTokensPerSecond"`
	DecodeTokensPerSecond  *anchorDistribution      `json:"decodeTokensPerSecond"`
	TotalMs                *anchorDistribution      `json:"totalMs"`
	TPOTMs                 *anchorDistribution      `json:"tpotMs"` // addition
	CachedPromptShare      *float64                 `json:"cachedPromptShare"`
	Lengths                *snapshot.Lengths        `json:"lengths"`            // addition
	PerModel               map[string]*anchorWindow `json:"perModel,omitempty"` // addition
}

type anchorRequest struct {
	RequestID              string   `json:"requestId"`
	Model                  string   `json:"model"`
	At                     int64    `json:"at"`
	Finish                 string   `json:"finish"`
	PromptTokens           int64    `json:"promptTokens"`
	CachedPromptTokens     int64    `json:"cachedPromptTokens"`
	CompletionTokens       int64    `json:"completionTokens"`
	QueueMs                *float64 `json:"queueMs"`
	TTFTMs                 *float64 `json:"ttftMs"`
	PrefillTokensPerSecond *float64 `json:"prefillTokensPerSecond"`
	DecodeTokensPerSecond  *float64 `json:"decodeTokensPerSecond"`
	TotalMs                float64  `json:"totalMs"`
}

// The snapshot decodes into the anchor's shape with no field unknown to it,
// every field of it present (nullable ones as null, the others never null)
// and byFinish with the anchor's four reasons, for an empty store, the
// host's events, and a scraped cache reading that carries a usage ratio.
func TestSnapshotIsASupersetOfTheAnchorContract(t *testing.T) {
	const t0 = 1_796_280_000_000
	hostMix := []string{
		`{"type":"model.load","at":1796280000000,"model":"zeta/first-seen","phase":"finished","ms":2400,"weightsBytes":2263000000,"resumed":false}`,
		`{"type":"model.load","at":1796280000100,"model":"alpha/second","phase":"started"}`,
		`{"type":"model.memory","at":1796280000200,"model":"zeta/first-seen","weightsBytes":2263000000,"kvBytes":1000,"prefixCacheBytes":500}`,
		`{"type":"scheduler.sample","at":1796280001000,"model":"zeta/first-seen","active":3,"capacity":8,"queued":1,"tokensPerSecond":120.5}`,
		`{"type":"cache.sample","at":1796280001000,"model":"zeta/first-seen","cache":"kv","bytes":1000,"capacityBytes":4000,"hits":null,"misses":null}`,
		`{"type":"cache.sample","at":1796280001000,"model":"zeta/first-seen","cache":"prefix","bytes":50331648,"capacityBytes":null,"hits":768,"misses":1737}`,
		`{"type":"request.finished","at":1796280001000,"model":"zeta/first-seen","requestId":"r1","finish":"stop","promptTokens":812,"cachedPromptTokens":768,"completionTokens":64,"queueMs":null,"ttftMs":88.1,"prefillTokensPerSecond":null,"decodeTokensPerSecond":60,"totalMs":1154}`,
		`{"type":"job.state","at":1796280001000,"jobId":"j","kind":"bench-serve","status":"running"}`,
	}
	ratio := 0.25
	for _, tc := range []struct {
		name  string
		lines []string       // the host's flat events
		more  []events.Event // events no host line carries (a scraper's usage ratio)
		src   *snapshot.Source
		check func(t *testing.T, got anchorSnapshot)
	}{
		{name: "empty store", check: func(t *testing.T, got anchorSnapshot) {
			if len(got.Models) != 0 || got.Requests.Finished != 0 {
				t.Errorf("an empty store shows %+v", got)
			}
		}},
		{name: "host mix", lines: hostMix, check: func(t *testing.T, got anchorSnapshot) {
			if len(got.Models) != 2 || got.Models[0].Model != "zeta/first-seen" || got.Models[1].Model != "alpha/second" {
				t.Errorf("models not in first-seen order: %+v", got.Models)
			}
			if len(got.Caches) != 1 || got.Caches[0].KV == nil || got.Caches[0].Prefix == nil || got.Caches[0].Prefix.Hits != 768 {
				t.Errorf("caches %+v", got.Caches)
			}
		}},
		{name: "scraped usage ratio", more: []events.Event{{Type: events.TypeCacheSample, At: t0 + 1000,
			Payload: &events.CacheSample{Model: "vllm/m", Cache: events.CacheKV, UsageRatio: &ratio}}},
			check: func(t *testing.T, got anchorSnapshot) {
				if len(got.Caches) != 1 || got.Caches[0].KV == nil || got.Caches[0].KV.UsageRatio == nil || *got.Caches[0].KV.UsageRatio != ratio {
					t.Errorf("caches %+v, want the kv usage ratio %v", got.Caches, ratio)
				}
			}},
		{name: "a followed host not reached", src: &snapshot.Source{Kind: snapshot.SourceFollow, Host: "h:9", State: snapshot.SourceUnreached,
			Since: t0, FailedAttempts: 3, Error: "connection refused"},
			check: func(t *testing.T, got anchorSnapshot) {
				if len(got.Sources) != 1 || got.Sources[0].State != snapshot.SourceUnreached || got.Version != 1 {
					t.Errorf("sources %+v at version %d", got.Sources, got.Version)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bus.New()
			fake := clock.NewFake(time.UnixMilli(t0 + 5000))
			l := New(b, Options{Clock: fake})
			defer l.Close()
			if tc.src != nil {
				l.SetSource(*tc.src)
			}
			for _, line := range tc.lines {
				ev, err := events.Parse([]byte(line))
				if err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				b.Publish(ev)
			}
			for _, ev := range tc.more {
				b.Publish(ev)
			}
			b.Flush()
			_, data, err := l.Encode(fake.Now())
			if err != nil {
				t.Fatal(err)
			}

			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			var got anchorSnapshot
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("snapshot drifted from the anchor's contract: %v\n%s", err, data)
			}
			var raw any
			_ = json.Unmarshal(data, &raw)
			requirePresent(t, "snapshot", reflect.TypeOf(got), raw)
			for _, f := range []events.FinishReason{events.FinishStop, events.FinishLength, events.FinishCancelled, events.FinishError} {
				if _, ok := got.Requests.ByFinish[string(f)]; !ok { // the anchor's own type
					t.Errorf("byFinish lacks %q", f)
				}
			}
			if got.At != t0+5000 {
				t.Errorf("at %d, want the clock's %d", got.At, t0+5000)
			}
			tc.check(t, got)
		})
	}
}

// requirePresent fails when a key the anchor's shape has (without
// omitempty) is missing from the JSON value v, or is null where the
// anchor's type is not nullable (a pointer here).
func requirePresent(t *testing.T, path string, typ reflect.Type, v any) {
	t.Helper()
	if v == nil {
		if typ.Kind() != reflect.Pointer && typ.Kind() != reflect.Interface {
			t.Errorf("%s is null; the anchor types it %s, never null", path, typ)
		}
		return
	}
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch typ.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			if v != nil {
				t.Errorf("%s: not an object", path)
			}
			return
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			val, present := obj[name]
			if !present {
				if opts != "omitempty" {
					t.Errorf("%s.%s missing (the anchor has it; nullable fields must be null, not absent)", path, name)
				}
				continue
			}
			requirePresent(t, path+"."+name, f.Type, val)
		}
	case reflect.Slice:
		if arr, ok := v.([]any); ok {
			for _, e := range arr {
				requirePresent(t, path+"[]", typ.Elem(), e)
			}
		}
	}
}
