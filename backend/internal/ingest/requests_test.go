package ingest

import (
	"testing"
	"time"
)

// A request two sources report counts once; one source repeating itself,
// another request, an expired report and one pushed out by the bound do
// not count as duplicates. OpenAI's object prefixes do not tell ids apart.
func TestRequestsDuplicate(t *testing.T) {
	t0 := time.Unix(1_764_690_000, 0)
	type report struct {
		source, id string
		after      time.Duration
		dup        bool
		other      string
	}
	tests := []struct {
		name    string
		max     int
		reports []report
	}{
		{"engine then proxy", 0, []report{
			{"POST /events", "sim-7", 0, false, ""},
			{"proxy", "cmpl-sim-7", time.Millisecond, true, "POST /events"},
		}},
		{"proxy then engine, chat", 0, []report{
			{"proxy", "chatcmpl-sim-8", 0, false, ""},
			{"POST /events", "sim-8", 5 * time.Millisecond, true, "proxy"},
		}},
		{"one source twice", 0, []report{
			{"proxy", "a", 0, false, ""},
			{"proxy", "a", time.Second, false, ""},
		}},
		{"two sources, no proxy", 0, []report{
			{"POST /events", "r1", 0, false, ""},
			{"follow http://host", "r1", time.Millisecond, false, ""},
		}},
		{"other requests", 0, []report{
			{"proxy", "a", 0, false, ""},
			{"POST /events", "b", 0, false, ""},
			{"POST /events", "", 0, false, ""},
			{"proxy", "", 0, false, ""},
		}},
		{"after the window", 0, []report{
			{"proxy", "a", 0, false, ""},
			{"POST /events", "a", DefaultRequestWindow, false, ""},
		}},
		{"past the bound", 2, []report{
			{"proxy", "a", 0, false, ""},
			{"proxy", "b", 0, false, ""},
			{"proxy", "c", 0, false, ""},
			{"POST /events", "a", 0, false, ""},
			{"POST /events", "c", 0, true, "proxy"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRequests(0, tt.max)
			for i, rep := range tt.reports {
				other, dup := r.Duplicate(rep.source, rep.id, t0.Add(rep.after))
				if dup != rep.dup || other != rep.other {
					t.Errorf("report %d (%s %q): %q %v, want %q %v", i, rep.source, rep.id, other, dup, rep.other, rep.dup)
				}
			}
			if len(r.seen) != len(r.order) || (tt.max > 0 && len(r.order) > tt.max) {
				t.Errorf("%d remembered, %d in order (bound %d)", len(r.seen), len(r.order), tt.max)
			}
		})
	}
}
