package jobs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

func TestReadEventsFollows(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, eventsFile)
	appendText := func(s string) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(s)
		f.Close()
	}
	var off int64
	steps := []struct {
		write     string
		after     int
		wantSeqs  []int
		wantAdded int64 // bytes consumed
	}{
		{"", 0, nil, 0},
		{`{"seq":1,"type":"started"}` + "\n" + `{"seq":2,"type":"log"}` + "\n" + `{"seq":3,"ty`, 0, []int{1, 2}, 50},
		{`pe":"log"}` + "\n", 0, []int{3}, 23},
		{`{torn` + "\n" + `{"seq":4,"type":"log"}` + "\n", 0, []int{4}, 29},
		{`{"seq":5,"type":"done"}` + "\n", 5, nil, 24},
	}
	for i, st := range steps {
		if st.write != "" {
			appendText(st.write)
		}
		evs, next, err := readEvents(dir, st.after, off)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []int
		for _, e := range evs {
			seqs = append(seqs, e.Seq)
		}
		if len(seqs) != len(st.wantSeqs) || next-off != st.wantAdded {
			t.Fatalf("step %d: seqs %v (want %v), read %d bytes (want %d)", i, seqs, st.wantSeqs, next-off, st.wantAdded)
		}
		for k := range seqs {
			if seqs[k] != st.wantSeqs[k] {
				t.Fatalf("step %d: seqs %v, want %v", i, seqs, st.wantSeqs)
			}
		}
		off = next
	}
	all, _, _ := readEvents(dir, 2, 0)
	if len(all) != 3 || all[0].Seq != 3 {
		t.Fatalf("replay after 2 = %+v", all)
	}
}

// TestEventLogAppend: the log numbers what it appends on from the seq it
// was opened after, wakes its watchers at each event, and takes no more
// writes once closed; a reader gets the lines readEvents always read.
func TestEventLogAppend(t *testing.T) {
	dir := t.TempDir()
	l, err := openEventLog(dir, 2) // as a restart continues a log of two
	if err != nil {
		t.Fatal(err)
	}
	changed := l.watch()
	if err := l.append(bench.JobEvent{Type: bench.EventLog, Message: "a"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	default:
		t.Fatal("append did not wake the watcher")
	}
	l.append(bench.JobEvent{Seq: 99, Type: bench.EventDone, Message: "b"}) // the log's seq wins
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	l.append(bench.JobEvent{Type: bench.EventLog, Message: "after close"})
	evs, next, err := l.read(0, 0)
	if err != nil || len(evs) != 2 || evs[0].Seq != 3 || evs[1].Seq != 4 || evs[1].Message != "b" {
		t.Fatalf("read = %+v %v", evs, err)
	}
	if more, _, _ := l.read(0, next); len(more) != 0 {
		t.Fatalf("read on from %d = %+v", next, more)
	}
	if got := lastSeq(dir); got != 4 {
		t.Fatalf("lastSeq = %d", got)
	}
}
