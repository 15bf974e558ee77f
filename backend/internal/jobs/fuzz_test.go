package jobs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzReadEvents: whatever a crash left in a job's event log, replaying it
// never panics, answers events in the log's order past after, and a
// follower reading on from the offset it was given reads nothing twice.
func FuzzReadEvents(f *testing.F) {
	for _, seed := range []string{
		"", "\n", `{"seq":1,"type":"log","message":"a"}` + "\n",
		`{"seq":1,"type":"log"}` + "\n" + `{"seq":2,"ty`, // torn last line
		"garbage\n" + `{"seq":3}` + "\n",
		`{"seq":-5}` + "\n" + `{"seq":99999999999999999999}` + "\n",
	} {
		f.Add([]byte(seed), 0)
	}
	f.Fuzz(func(t *testing.T, data []byte, after int) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, eventsFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		evs, next, err := readEvents(dir, after, 0)
		if err != nil {
			t.Fatal(err)
		}
		if next < 0 || next > int64(len(data)) {
			t.Fatalf("next offset %d outside the log (%d bytes)", next, len(data))
		}
		for _, e := range evs {
			if e.Seq <= after {
				t.Fatalf("event %d at or before %d", e.Seq, after)
			}
		}
		more, next2, err := readEvents(dir, after, next)
		if err != nil || len(more) != 0 || next2 != next {
			t.Fatalf("reading on from %d: %d events, next %d, %v", next, len(more), next2, err)
		}
	})
}

// FuzzReadOpenIndex: whatever the open index holds, reading it never
// panics, and what it trusts is only run ids (nothing that reaches out of
// the runs directory); anything else is an error (a full scan follows).
func FuzzReadOpenIndex(f *testing.F) {
	for _, seed := range []string{
		`{"open":[]}`, `{"open":["20261202T155633Z-0a1b2c"]}`, `{"open":["../x"]}`, `{"open":[".open.json"]}`,
		`{}`, `{"open":null}`, `{"open":[1]}`, `{"open":["a"`, "", "\x00",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, openIndexFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		ids, err := readOpenIndex(dir)
		if err != nil {
			return
		}
		for _, id := range ids {
			if !validID(id) || filepath.Base(id) != id {
				t.Fatalf("trusted %q", id)
			}
		}
	})
}

// FuzzReadIDs: whatever the ids file holds (a torn append, garbage, lines
// longer than a block), reading it from its end never panics and answers
// only run ids, each a whole line of the file, newest (last) first; a new
// id appended after it reads back first and whole.
func FuzzReadIDs(f *testing.F) {
	for _, seed := range []string{
		"", "\n", "20261202T155633Z-0a1b2c\n", "a\nb\nc\n", "a\nb\n20261202T1556", "../x\n.open.json\nok\n",
		"\n\n\nz\n", strings.Repeat("x", idsBlock+3) + "\nafter\n", strings.Repeat("id\n", idsBlock/2),
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir() // one per fuzzing process, whose inputs run one at a time
	f.Fuzz(func(t *testing.T, data []byte) {
		l := listOf(t, dir, data)
		lines := strings.Split(string(data), "\n")
		var want []string // the lines that are ids, last first
		for i := len(lines) - 1; i >= 0; i-- {
			if validID(lines[i]) {
				want = append(want, lines[i])
			}
		}
		if got := l.ids(t); !slices.Equal(got, want) {
			t.Fatalf("read %q, want %q", got, want)
		}
		if err := l.append("new-id"); err != nil {
			t.Fatal(err)
		}
		var again runList
		if err := again.open(dir); err != nil {
			t.Fatal(err)
		}
		if got := again.ids(t); len(got) == 0 || got[0] != "new-id" {
			t.Fatalf("after an append: %q", got)
		}
	})
}

// FuzzOpenIDs: whatever the ids file holds, reading what it has open never
// panics and trusts only run ids, sorted, each once; a checkpoint appended
// after it is what it reads next, and a close appended after that closes.
func FuzzOpenIDs(f *testing.F) {
	for _, seed := range []string{
		"", "\n", "a\nb\n", "[]\n", "[a b]\n-a\nc\n", "[a]\nb\n[b c", "[../x]\n+y\n-z\n", "[\n]\n[ ]\n",
		"a\n[" + strings.Repeat("b ", idsBlock) + "]\n", strings.Repeat("x", idsBlock+3) + "\n[a]\n",
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir() // one per fuzzing process, whose inputs run one at a time
	f.Fuzz(func(t *testing.T, data []byte) {
		l := listOf(t, dir, data)
		ids, _, err := l.openIDs()
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range ids {
			if !validID(id) || (i > 0 && ids[i-1] >= id) {
				t.Fatalf("open %q", ids)
			}
		}
		want := []string{"new-a", "new-b"}
		if err := l.write(checkpoint(want)); err != nil {
			t.Fatal(err)
		}
		if ids, found, err := l.openIDs(); err != nil || !found || !slices.Equal(ids, want) {
			t.Fatalf("after a checkpoint: %q, found %v, %v", ids, found, err)
		}
		if err := l.write("-new-a"); err != nil {
			t.Fatal(err)
		}
		if ids, found, err := l.openIDs(); err != nil || !found || !slices.Equal(ids, want[1:]) {
			t.Fatalf("after a close: %q, found %v, %v", ids, found, err)
		}
	})
}

// TestDecodeJobDropsUnsafeRunners: a job.json naming a runner no backend
// started (damaged, or written by hand) keeps its job but loses the
// runner, so recovery signals no group but the runner's own.
func TestDecodeJobDropsUnsafeRunners(t *testing.T) {
	const job = `{"id":"20261201T100000Z-aaaaaa","kind":"bench-serve","status":"running","runner":%s}`
	tests := []struct {
		runner string
		keep   bool
	}{
		{`{"pid":4242,"pgid":4242,"start":"123"}`, true},
		{`{"pid":4242,"pgid":1,"start":"123"}`, false}, // kill(-1): every process of the user
		{`{"pid":4242,"pgid":0,"start":"123"}`, false}, // kill(0): the backend's own group
		{`{"pid":4242,"pgid":-7,"start":"123"}`, false},
		{`{"pid":4242,"pgid":4243,"start":"123"}`, false},
		{`{"pid":1,"pgid":1,"start":"1"}`, false},
		{`{"pid":0,"pgid":0,"start":"1"}`, false},
		{`{"pid":4242,"pgid":4242,"start":""}`, false},
		{`null`, false},
	}
	for _, tt := range tests {
		dj, err := decodeJob(fmt.Appendf(nil, job, tt.runner))
		if err != nil {
			t.Fatalf("%s: %v", tt.runner, err)
		}
		if dj.ID != "20261201T100000Z-aaaaaa" || dj.Status != "running" {
			t.Errorf("%s: job %+v", tt.runner, dj.Job)
		}
		if (dj.Runner != nil) != tt.keep {
			t.Errorf("%s: runner %+v, want kept %v", tt.runner, dj.Runner, tt.keep)
		}
	}
}

// FuzzDecodeJob: whatever a job.json holds, decoding it never panics, and
// a runner it keeps is one recovery may signal: a pid above 1 leading its
// own group, with a start time to tell it from a later process.
func FuzzDecodeJob(f *testing.F) {
	for _, seed := range []string{
		`{"id":"20261201T100000Z-aaaaaa","kind":"bench-serve","status":"running","runner":{"pid":4242,"pgid":4242,"start":"123"}}`,
		`{"id":"20261201T100000Z-aaaaaa","status":"running","runner":{"pid":4242,"pgid":1,"start":"123"}}`,
		`{"id":"x","status":"done","progress":{"done":1,"total":2}}`,
		`{"runner":{"pid":1e99}}`, `{"runner":{"pid":-1,"pgid":-1,"start":"1"}}`, `{"status":7}`,
		``, `{`, `null`, `[]`, "\x00",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dj, err := decodeJob(data)
		if err != nil {
			return
		}
		if p := dj.Runner; p != nil && (p.Pid < 2 || p.Pgid != p.Pid || p.Start == "") {
			t.Fatalf("kept runner %+v", *p)
		}
	})
}
