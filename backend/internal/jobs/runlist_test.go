package jobs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// ids lists the run list's ids, newest first, reading all of it.
func (l *runList) ids(t *testing.T) []string {
	t.Helper()
	var got []string
	for i := 0; ; i++ {
		more, err := l.has(i)
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			return got
		}
		got = append(got, l.id(i))
	}
}

// listOf opens the run list of an ids file holding data, in dir.
func listOf(t *testing.T, dir string, data []byte) *runList {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, idsFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	var l runList
	if err := l.open(dir); err != nil {
		t.Fatal(err)
	}
	return &l
}

// TestRunList: a home from before the ids file gets one from its
// directory's names (sorted), once; new ids follow in the order of the
// submits (a clock that went back included); the file is read from its end
// across blocks, each id once; a torn last line and lines that are not ids
// are passed over; what was learned of a run stays with it.
func TestRunList(t *testing.T) {
	dir := t.TempDir()
	for _, id := range []string{"b2", "d4", ".hidden", "not a run"} {
		os.Mkdir(filepath.Join(dir, id), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "f5"), nil, 0o644) // listed: a file is found out when read
	var l runList
	if err := l.open(dir); err != nil {
		t.Fatal(err)
	}
	if got, want := l.ids(t), []string{"f5", "d4", "b2"}; !slices.Equal(got, want) {
		t.Fatalf("from the directory: %q, want %q", got, want)
	}
	l.learn(1, &job{jobState: jobState{Job: bench.Job{ID: "d4", Kind: bench.JobKind, Status: bench.StatusDone}}})
	for _, id := range []string{"e5", "a1"} { // a1: the clock went back
		if err := l.append(id); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := l.ids(t), []string{"a1", "e5", "f5", "d4", "b2"}; !slices.Equal(got, want) {
		t.Fatalf("after two submits: %q, want %q", got, want)
	}
	if i := slices.Index(l.ids(t), "d4"); !l.skip(i, Filter{Status: bench.StatusFailed}) || l.skip(i, Filter{Status: bench.StatusDone}) {
		t.Fatal("what was learned of d4 moved")
	}
	data, _ := os.ReadFile(filepath.Join(dir, idsFile))
	if string(data) != "b2\nd4\nf5\ne5\na1\n" {
		t.Fatalf("ids file %q", data)
	}

	// A later start reads the file, not the directory.
	os.Mkdir(filepath.Join(dir, "z9"), 0o755)
	var again runList
	if err := again.open(dir); err != nil {
		t.Fatal(err)
	}
	if got, want := again.ids(t), []string{"a1", "e5", "f5", "d4", "b2"}; !slices.Equal(got, want) {
		t.Fatalf("read again: %q, want %q", got, want)
	}
}

// TestRunListReadsBlocks: a long ids file is read from its end a block at
// a time, and only as far as asked; a line cut by a block's start, a torn
// append, a line longer than any id and an empty line come out right.
func TestRunListReadsBlocks(t *testing.T) {
	dir := t.TempDir()
	var want []string // newest first
	var data []byte
	for i := range 4000 { // about three blocks
		id := fmt.Sprintf("20261201T%06dZ-%06x", i, i)
		if i == 1234 {
			data = append(data, strings.Repeat("x", idsBlock+10)...) // not an id, across a block
			data = append(data, "\n\n"...)
		}
		data = append(append(data, id...), '\n')
		want = append([]string{id}, want...)
	}
	data = append(data, "20261202T0000"...) // an append a crash cut short
	os.WriteFile(filepath.Join(dir, idsFile), data, 0o644)

	var l runList
	if err := l.open(dir); err != nil {
		t.Fatal(err)
	}
	if more, err := l.has(49); !more || err != nil {
		t.Fatalf("has(49) = %v, %v", more, err)
	}
	if l.from < int64(len(data))-idsBlock {
		t.Errorf("50 ids read %d bytes of %d: more than one block", int64(len(data))-l.from, len(data))
	}
	if err := l.append("20261203T000000Z-aaaaaa"); err != nil {
		t.Fatal(err)
	}
	got := l.ids(t)
	if got[0] != "20261203T000000Z-aaaaaa" {
		t.Errorf("newest %q", got[0])
	}
	// The torn line reads as an id no directory has (no job, skipped).
	if !slices.Equal(got[2:], want) || got[1] != "20261202T0000" {
		t.Errorf("%d ids, want %d; first %q", len(got), len(want)+2, got[:3])
	}
	data, _ = os.ReadFile(filepath.Join(dir, idsFile))
	if !strings.HasSuffix(string(data), "20261202T0000\n20261203T000000Z-aaaaaa\n") {
		t.Errorf("the torn line took the new id: %q", data[len(data)-40:])
	}
}

func TestRunListSkip(t *testing.T) {
	tests := []struct {
		kind   string
		status bench.JobStatus
		notJob bool
		f      Filter
		skip   bool
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
		var l runList
		l.added.push([]byte("a"))
		l.learn(0, &job{jobState: jobState{Job: bench.Job{ID: "a", Kind: tt.kind, Status: tt.status}}})
		if tt.notJob {
			l.notJob(0)
		}
		if got := l.skip(0, tt.f); got != tt.skip {
			t.Errorf("%s %s (not a job: %v), skip(%+v) = %v", tt.kind, tt.status, tt.notJob, tt.f, got)
		}
	}
}

// TestOpenIDs: the jobs open in the index are read back to its newest whole
// checkpoint: those it names and those given or found after it, less those
// closed after them; a checkpoint cut short or naming what is not a run id
// does not count; lines that are nothing are passed over; a file with no
// checkpoint (a home from before them) says so.
func TestOpenIDs(t *testing.T) {
	var long strings.Builder // 4000 ids, all closed but two, over several blocks
	long.WriteString("[a0]\n")
	for i := range 4000 {
		id := fmt.Sprintf("20261201T%06dZ-%06x", i, i)
		long.WriteString(id + "\n")
		if i != 7 && i != 3999 {
			long.WriteString("-" + id + "\n")
		}
		if i == 1234 {
			long.WriteString(strings.Repeat("x", idsBlock+10) + "\n") // not a line of the backend's, across a block
		}
	}
	var wide strings.Builder // a checkpoint wider than a block
	var wideIDs []string
	for i := range 2000 {
		wideIDs = append(wideIDs, fmt.Sprintf("20261201T%06dZ-%06x", i, i))
	}
	wide.WriteString("a\n" + checkpoint(wideIDs) + "\n-" + wideIDs[5] + "\n")
	tests := []struct {
		name  string
		data  string
		want  []string
		found bool
	}{
		{"empty", "", []string{}, false},
		{"no checkpoint", "a\nb\n-a\n", []string{"b"}, false},
		{"none open", "a\nb\n[]\n", []string{}, true},
		{"given and closed after", "a\n[]\nb\nc\n-b\n", []string{"c"}, true},
		{"named and closed after", "a\n[a b]\n-a\nc\n", []string{"b", "c"}, true},
		{"a stray found", "[x]\n-x\n+y\n", []string{"y"}, true},
		{"closed before the checkpoint", "-a\n[a]\n", []string{"a"}, true},
		{"given again after closed", "[]\n-a\na\n", []string{"a"}, true},
		{"checkpoint cut short", "[a]\nb\n[b c", []string{"a", "b"}, true},
		{"checkpoint cut short, then an append", "[a]\nb\n[b c\nd\n", []string{"a", "b", "d"}, true},
		{"checkpoint naming a path", "[a]\n[../x]\n", []string{"a"}, true},
		{"checkpoint too long", "[a]\n[" + strings.Repeat("b ", maxIndexLine/2+1) + "]\n", []string{"a"}, true},
		{"not lines of the backend's", "[]\nxx yy\n../z\n\n+\n-\n-../z\n+.open.json\n[\n]\n", []string{}, true},
		{"a torn id", "[]\n2026120", []string{"2026120"}, true},
		{"over several blocks", long.String(), []string{"20261201T000007Z-000007", "20261201T003999Z-000f9f", "a0"}, true},
		{"a checkpoint over a block", wide.String(), slices.Delete(slices.Clone(wideIDs), 5, 6), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found, err := listOf(t, t.TempDir(), []byte(tt.data)).openIDs()
			if err != nil || found != tt.found || !slices.Equal(got, tt.want) {
				t.Fatalf("openIDs = %d %q..., found %v, %v; want %d %q..., found %v",
					len(got), got[:min(len(got), 3)], found, err, len(tt.want), tt.want[:min(len(tt.want), 3)], tt.found)
			}
		})
	}
}
