package ingest

import "testing"

// The window drops what it remembers; once it has forgotten, a resumed
// stream's events no newer than the newest forgotten at are dropped too,
// while the first connection's late events still pass.
func TestSeenSet(t *testing.T) {
	type add struct {
		id      string
		at      int64
		resumed bool
		want    verdict
	}
	tests := []struct {
		name          string
		adds          []add
		repeats, gone uint64
	}{
		{"repeats within the window", []add{
			{"a", 1, false, fresh}, {"b", 2, false, fresh}, {"a", 1, false, repeat}, {"b", 2, true, repeat},
		}, 2, 0},
		{"nothing forgotten: an old event is new", []add{
			{"b", 5, false, fresh}, {"a", 1, true, fresh},
		}, 0, 0},
		{"forgotten, resumed: at or before the newest forgotten is dropped", []add{
			{"a", 1, false, fresh}, {"b", 3, false, fresh}, {"c", 4, false, fresh}, // a forgotten
			{"d", 5, false, fresh}, // b forgotten: the newest forgotten at is 3
			{"a", 1, true, forgotten}, {"x", 3, true, forgotten}, {"e", 4, true, fresh},
		}, 0, 2},
		{"forgotten, first connection: a late event passes", []add{
			{"a", 1, false, fresh}, {"b", 2, false, fresh}, {"c", 3, false, fresh}, {"z", 0, false, fresh},
		}, 0, 0},
		{"the newest forgotten at, not the last: out-of-order history", []add{
			{"a", 9, false, fresh}, {"b", 2, false, fresh}, {"c", 10, false, fresh}, {"d", 11, false, fresh}, // a, b forgotten
			{"y", 8, true, forgotten},
		}, 0, 1},
		{"no identity is always fresh", []add{
			{"", 1, false, fresh}, {"", 1, false, fresh}, {"", 1, false, fresh}, {"", 1, true, fresh},
		}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSeenSet(2)
			for i, a := range tt.adds {
				if got := s.add(a.id, a.at, a.resumed); got != a.want {
					t.Errorf("add %d (%q at %d, resumed %v) = %v, want %v", i, a.id, a.at, a.resumed, got, a.want)
				}
			}
			if s.repeats.Load() != tt.repeats || s.beyond.Load() != tt.gone {
				t.Errorf("counted %d repeats, %d beyond the window; want %d, %d", s.repeats.Load(), s.beyond.Load(), tt.repeats, tt.gone)
			}
		})
	}
}
