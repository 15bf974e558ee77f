package snapshot

import (
	"encoding/json"
	"math"
	"testing"
)

func TestEncodeNeverFails(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, tc := range []struct {
		name      string
		snap      Snapshot
		sanitized bool
	}{
		{"finite", Snapshot{At: 1, Series: []SeriesPoint{{At: 1, TokensPerSecond: 5}}}, false},
		{"+Inf in the series", Snapshot{At: 1, Series: []SeriesPoint{{At: 1, TokensPerSecond: inf}}}, true},
		{"NaN behind a pointer", Snapshot{Models: []Model{{Model: "m", LastLoadMs: &nan}}}, true},
		{"Inf in a per-model window", Snapshot{Requests: Requests{Window: Window{PerModel: map[string]*Window{
			"m": {TTFTMs: &Distribution{Count: 1, Mean: inf}}}}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, sanitized := Encode(&tc.snap)
			if sanitized != tc.sanitized {
				t.Fatalf("sanitized = %v, want %v", sanitized, tc.sanitized)
			}
			var back map[string]any
			if err := json.Unmarshal(data, &back); err != nil {
				t.Fatalf("not JSON: %v: %s", err, data)
			}
			// The caller's snapshot is untouched.
			if _, err := json.Marshal(tc.snap); (err != nil) != tc.sanitized {
				t.Fatalf("original changed: marshal error %v", err)
			}
		})
	}
}
