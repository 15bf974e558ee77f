package jobs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// eventLog is one job's events.ndjson: one JSON event a line, numbered from
// 1 by seq, appended while the job runs and replayed by anyone after. Its
// writing side is guarded by Service.mu; read only reads the file, so a
// follower reads without holding the service.
type eventLog struct {
	dir     string
	f       *os.File // nil once closed, or for a log that is only read
	seq     int      // the seq of the last event appended
	changed chan struct{}
}

// openEventLog opens dir's log for appending after seq, the last seq it
// holds: 0 for a new job, lastSeq for one a restart settles.
func openEventLog(dir string, seq int) (*eventLog, error) {
	f, err := os.OpenFile(filepath.Join(dir, eventsFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &eventLog{dir: dir, f: f, seq: seq, changed: make(chan struct{})}, nil
}

// finishedEventLog is the log of a job that gets no more events: a final
// job read from disk.
func finishedEventLog(dir string) *eventLog {
	return &eventLog{dir: dir, changed: make(chan struct{})}
}

// append numbers ev with the next seq and writes it in one write, so that a
// reader sees whole lines, then wakes the log's watchers. A failed write
// still takes its seq: the events after it keep their numbers.
func (l *eventLog) append(ev bench.JobEvent) error {
	l.seq++
	ev.Seq = l.seq
	var err error
	if l.f != nil {
		data, _ := json.Marshal(ev)
		_, err = l.f.Write(append(data, '\n'))
	}
	close(l.changed)
	l.changed = make(chan struct{})
	return err
}

// watch returns a channel closed at the next append.
func (l *eventLog) watch() <-chan struct{} { return l.changed }

// read is readEvents of this log.
func (l *eventLog) read(after int, off int64) ([]bench.JobEvent, int64, error) {
	return readEvents(l.dir, after, off)
}

// close ends the writing; the log can still be read.
func (l *eventLog) close() error {
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// readEvents reads the events after seq from a job's log, starting at byte
// offset off (0, or a next offset it returned before, so a follower reads
// only what is new). A last line without its newline is being written and
// is left for the next read.
func readEvents(dir string, after int, off int64) (evs []bench.JobEvent, next int64, err error) {
	evs = []bench.JobEvent{}
	f, err := os.Open(filepath.Join(dir, eventsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return evs, off, nil
	}
	if err != nil {
		return nil, off, err
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, off, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, off, err
	}
	i := bytes.LastIndexByte(data, '\n')
	if i < 0 {
		return evs, off, nil
	}
	data = data[:i+1]
	next = off + int64(len(data))
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var e bench.JobEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue // a torn line from a crash; the rest still replays
		}
		if e.Seq > after {
			evs = append(evs, e)
		}
	}
	return evs, next, sc.Err()
}

// lastSeq is the highest seq in a job's log (0 when empty).
func lastSeq(dir string) int {
	evs, _, _ := readEvents(dir, 0, 0)
	if len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].Seq
}
