package snapshot

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// fill sets every field reachable from v to a value that is not the zero
// one, with strings and numbers that exercise the encoder's escaping and
// float formatting: a field added to the types but not to the encoder
// makes TestAppendJSONIsJSON fail.
func fill(v reflect.Value, seed int) { fillDepth(v, seed, 0) }

func fillDepth(v reflect.Value, seed, depth int) {
	if depth > 8 { // Window.PerModel holds Windows: one level is enough
		return
	}
	strs := []string{`m<&>"\` + "\x01\u2028é\xff", "mlx-community/Qwen3-4B-4bit", "tab\tnew\nline"}
	floats := []float64{12.25, 1.5e-7, 3e21, 1234567.125, 0.1}
	switch v.Kind() {
	case reflect.String:
		v.SetString(strs[seed%len(strs)])
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(7 + seed))
	case reflect.Uint64:
		v.SetUint(uint64(9 + seed))
	case reflect.Float64:
		v.SetFloat(floats[seed%len(floats)])
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fillDepth(p.Elem(), seed+1, depth+1)
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			fillDepth(v.Field(i), seed+i, depth+1)
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fillDepth(s.Index(i), seed+i, depth+1)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for i, k := range []string{"zeta", "alpha"} {
			e := reflect.New(v.Type().Elem()).Elem()
			fillDepth(e, seed+i, depth+1)
			m.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), e)
		}
		v.Set(m)
	}
}

func TestAppendJSONIsJSON(t *testing.T) {
	var full Snapshot
	fill(reflect.ValueOf(&full).Elem(), 0)
	// One level of perModel is what the store makes.
	for _, w := range full.Requests.Window.PerModel {
		w.PerModel = nil
	}
	for _, tc := range []struct {
		name string
		snap Snapshot
	}{
		{"every field set", full},
		{"empty", Snapshot{}},
		{"empty lists", Snapshot{Models: []Model{}, Schedulers: []Scheduler{}, Caches: []Cache{}, Series: []SeriesPoint{},
			Timeline: []TimelinePoint{}, Marks: []ModelMark{}, Sources: []Source{}, Requests: Requests{ByFinish: FinishTotals{}, Recent: []Recent{}}}},
		{"a source without an error", Snapshot{Sources: []Source{{Kind: SourceFollow, Host: "h:1", State: SourceConnected}}}},
		{"nulls inside", Snapshot{Caches: []Cache{{Model: "m"}}, Models: []Model{{}}, Timeline: []TimelinePoint{{}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(&tc.snap)
			if err != nil {
				t.Fatal(err)
			}
			got, sanitized := AppendJSON(nil, &tc.snap)
			if sanitized || !bytes.Equal(got, want) {
				t.Fatalf("differs from encoding/json (sanitized %v):\n got %s\nwant %s", sanitized, got, want)
			}
		})
	}
}

// FuzzAppendJSON: for any strings and numbers, the encoder writes what
// encoding/json writes, and for non-finite numbers valid JSON all the same.
func FuzzAppendJSON(f *testing.F) {
	f.Add("m", "r", 1.5, 2.0, int64(3))
	f.Add("<\u2028\xff\"", "\x00", 1e-7, 1e21, int64(-1))
	f.Add("", "", math.Inf(1), math.NaN(), int64(0))
	f.Fuzz(func(t *testing.T, model, text string, x, y float64, n int64) {
		s := Snapshot{
			At: n, Models: []Model{{Model: model, State: text, LastLoadMs: &x, LastError: &text, Loads: n}},
			Schedulers: []Scheduler{{At: n}}, Series: []SeriesPoint{{At: n, TokensPerSecond: x}},
			Requests: Requests{ByFinish: FinishTotals{events.FinishReason(text): n, events.FinishReason(model): 1}, Window: Window{
				TTFTMs: &Distribution{Mean: x, P50: y}, CachedPromptShare: &y, PerModel: map[string]*Window{model: {Count: 1}},
				Lengths: &Lengths{Bounds: []int64{n}, Prompt: []int{1, 2}}}},
			Marks: []ModelMark{{Model: model, Kind: text, Ms: &y}},
			Timeline: []TimelinePoint{{KVUsage: &x, TTFTMs: &Quantiles{P99: y}, PrefillMs: &Quantiles{P50: x}, PromptTokens: n,
				Scheduler: &IntervalScheduler{Samples: 1, TokensPerSecond: x}, Minute: &Minute{Requests: 2, QueueMs: &Quantiles{P95: y}, PrefixHitRate: &x}}},
		}
		got, sanitized := AppendJSON(nil, &s)
		if !json.Valid(got) {
			t.Fatalf("not JSON: %s", got)
		}
		want, err := json.Marshal(&s)
		if finite := !math.IsNaN(x) && !math.IsInf(x, 0) && !math.IsNaN(y) && !math.IsInf(y, 0); finite {
			if err != nil || sanitized || !bytes.Equal(got, want) {
				t.Fatalf("differs from encoding/json (%v):\n got %s\nwant %s", err, got, want)
			}
		} else if !sanitized {
			t.Fatal("a non-finite number was not reported")
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	var s Snapshot
	fill(reflect.ValueOf(&s).Elem(), 0)
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 64<<10)
		for b.Loop() {
			buf, _ = AppendJSON(buf[:0], &s)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(&s)
		}
	})
}

// byFinish's keys come in the anchor's order, stop, length, cancelled,
// error, then any other sorted, from either encoder.
func TestFinishTotalsOrder(t *testing.T) {
	f := FinishTotals{"error": 1, "zeta": 2, "cancelled": 3, "alpha": 4, "length": 5, "stop": 6}
	const want = `{"stop":6,"length":5,"cancelled":3,"error":1,"alpha":4,"zeta":2}`
	std, err := json.Marshal(f)
	if err != nil || string(std) != want {
		t.Errorf("encoding/json: %s %v, want %s", std, err, want)
	}
	s := Snapshot{Requests: Requests{ByFinish: f}}
	got, _ := AppendJSON(nil, &s)
	if !bytes.Contains(got, []byte(`"byFinish":`+want)) {
		t.Errorf("AppendJSON: %s, want byFinish %s", got, want)
	}
}
