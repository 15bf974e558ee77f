package jobs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// TestRunListAdd: ids stay sorted whatever order they come in (a clock
// that went back), each once, with what was learned kept in its place.
func TestRunListAdd(t *testing.T) {
	dir := t.TempDir()
	for _, id := range []string{"b2", "d4", ".hidden", "not a run"} {
		os.Mkdir(filepath.Join(dir, id), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "f5"), nil, 0o644) // listed: a file is found out when read
	var l runList
	l.add("zz") // before build: the directory's names will have it
	if err := l.build(dir); err != nil {
		t.Fatal(err)
	}
	l.learn(1, &job{jobState: jobState{Job: bench.Job{ID: "d4", Kind: bench.JobKind, Status: bench.StatusDone}}})
	steps := []struct {
		add  string
		want []string
	}{
		{"e5", []string{"b2", "d4", "e5", "f5"}},
		{"a1", []string{"a1", "b2", "d4", "e5", "f5"}},
		{"c3", []string{"a1", "b2", "c3", "d4", "e5", "f5"}},
		{"c3", []string{"a1", "b2", "c3", "d4", "e5", "f5"}},
		{"ccc", []string{"a1", "b2", "c3", "ccc", "d4", "e5", "f5"}},
		{"g6", []string{"a1", "b2", "c3", "ccc", "d4", "e5", "f5", "g6"}},
	}
	for _, st := range steps {
		l.add(st.add)
		var got []string
		for i := range l.len() {
			got = append(got, l.id(i))
		}
		if !slices.Equal(got, st.want) {
			t.Fatalf("after add %s: %q, want %q", st.add, got, st.want)
		}
		i, ok := l.find("d4")
		if !ok || !l.skip(i, Filter{Status: bench.StatusFailed}) || l.skip(i, Filter{Status: bench.StatusDone}) {
			t.Fatalf("after add %s: what was learned of d4 moved", st.add)
		}
	}
}

func TestRunListSkip(t *testing.T) {
	tests := []struct {
		kind, status string
		notJob       bool
		f            Filter
		skip         bool
	}{
		{bench.JobKind, bench.StatusDone, false, Filter{}, false},
		{bench.JobKind, bench.StatusDone, false, Filter{Status: bench.StatusFailed}, true},
		{bench.JobKind, bench.StatusDone, false, Filter{Kind: bench.JobKind, Status: bench.StatusDone}, false},
		{bench.JobKind, bench.StatusDone, false, Filter{Kind: "other"}, true},
		{"other", bench.StatusDone, false, Filter{Kind: bench.JobKind}, true},
		{"other", bench.StatusDone, false, Filter{Kind: "other"}, false},
		{"other", bench.StatusDone, false, Filter{Kind: "third"}, false},                     // read to compare
		{bench.JobKind, bench.StatusRunning, false, Filter{Status: bench.StatusDone}, false}, // not learned
		{bench.JobKind, bench.StatusCancelled, true, Filter{}, true},
	}
	for _, tt := range tests {
		l := runList{built: true, names: []byte("a"), ends: []uint32{1}, info: []uint8{0}}
		l.learn(0, &job{jobState: jobState{Job: bench.Job{ID: "a", Kind: tt.kind, Status: tt.status}}})
		if tt.notJob {
			l.notJob(0)
		}
		if got := l.skip(0, tt.f); got != tt.skip {
			t.Errorf("%s %s (not a job: %v), skip(%+v) = %v", tt.kind, tt.status, tt.notJob, tt.f, got)
		}
	}
}
