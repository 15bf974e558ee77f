package bench

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// What the original writes as null when unknown is null here too, and
// reads back as the zero value.
func TestNullWhenUnknown(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want []string // substrings of the JSON
	}{
		{"a profile without a scope", Profile{Name: "p", Models: []string{}}, []string{`"scope":null`}},
		{"a profile with its scope", Profile{Name: "p", Scope: ScopeAll, Models: []string{}}, []string{`"scope":"all"`}},
		{"a run that recorded no machine", HistoryEntry{ID: "r"}.View(), []string{`"machine":null`}},
		{"a run with its machine", HistoryEntry{ID: "r", Machine: Machine{Host: "h"}}.View(), []string{`"machine":{"chip":"","memoryBytes":0,"host":"h","os":""}`}},
		{"a cell without a configuration", CompactCell{Key: "k"}, []string{`"key":"k","model":"","kind":"","status":""`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("%s lacks %s", b, w)
				}
			}
		})
	}
}

func TestHistoryListRoundTrip(t *testing.T) {
	for _, m := range []Machine{{}, {Chip: "M4", MemoryBytes: 1 << 34, Host: "h", OS: "darwin"}} {
		in := HistoryList{Entries: []HistoryEntry{{ID: "r", Machine: m, Problems: []string{}, Cells: []CompactCell{}}}, Problems: []HistoryProblem{}}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var out HistoryList
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(in, out) {
			t.Errorf("round trip of %s:\n%+v\nwant\n%+v", b, out, in)
		}
	}
	var p Profile
	if err := json.Unmarshal([]byte(`{"name":"p","scope":null}`), &p); err != nil || p.Scope != "" {
		t.Errorf("scope null read as %q, %v", p.Scope, err)
	}
}

// A list of runs encoded one by one is the same body as the list.
func TestEncodedHistoryList(t *testing.T) {
	entries := []HistoryEntry{{ID: "a", Profile: "smoke", Cells: []CompactCell{{Key: "k"}}}, {ID: "b", Machine: Machine{Host: "h"}}}
	tests := []struct {
		name string
		list HistoryList
	}{
		{"empty", HistoryList{}},
		{"runs", HistoryList{Entries: entries}},
		{"runs, problems, truncated", HistoryList{Entries: entries, Problems: []HistoryProblem{{ID: "c", Message: "m"}}, Truncated: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var runs []json.RawMessage
			for _, e := range tt.list.Entries {
				b, err := json.Marshal(e.View())
				if err != nil {
					t.Fatal(err)
				}
				runs = append(runs, b)
			}
			want, err := json.Marshal(tt.list)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(EncodedHistoryList(runs, tt.list.Problems, tt.list.Truncated))
			if err != nil || string(got) != string(want) {
				t.Errorf("%s (%v), want %s", got, err, want)
			}
		})
	}
}
