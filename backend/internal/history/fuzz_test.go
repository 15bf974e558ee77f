package history

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeEntry: whatever bytes a history value holds, decoding answers
// the entry of the run its key names or an error with a bounded message,
// and never panics.
func FuzzDecodeEntry(f *testing.F) {
	good, _ := json.Marshal(entry(1))
	for _, seed := range []string{string(good), "", "{", "null", `{"id":"x"}`, `{"id":5}`, `{"cells":[{"decodeTokensPerSecond":"x"}]}`} {
		f.Add([]byte(seed))
	}
	key := entryKey(entry(1))
	f.Fuzz(func(t *testing.T, v []byte) {
		var got = entry(0)
		got.ID = ""
		err := decodeEntry(key, v, &got)
		if err == nil && got.ID != entry(1).ID {
			t.Fatalf("decoded run %q under the key of %q", got.ID, entry(1).ID)
		}
		if err != nil && len(err.Error()) > 1000 {
			t.Fatalf("unbounded message: %d bytes", len(err.Error()))
		}
	})
}
