package jobs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mlx-bun/mlx-metrics/shared/atomicfile"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// idsFile, in the runs directory, is the index of the jobs: every job the
// backend was given, one id a line, in the order of the submits, and which
// of them are open (their job.json may not be final). It is only ever
// appended to, each append synced, so List reads it from its end, a block
// at a time, as far as its limit takes it: listing the newest jobs costs
// the same however many runs are stored, from the first List after a
// start on. Its lines:
//
//	<id>          a submit: the job is listed, and open from here on
//	-<id>         the job's final job.json is written: no longer open
//	+<id>         a job found open that the index did not name (a stray)
//	[<id> <id>]   a checkpoint: exactly these jobs are open here ("[]":
//	              none), whatever came before
//
// Only the first kind is an id (validID), so List passes over the others.
// Recovery reads the file back to its newest whole checkpoint (openIDs):
// at most the jobs given since the queue was last empty. A line an append
// cut short is passed over; a checkpoint cut short (no closing bracket)
// does not count, so recovery reads back to the one before.
const idsFile = ".ids"

// idsBlock is how much of the ids file one read takes (about 1,400 ids).
const idsBlock = 32 << 10

// runList is the jobs' ids, newest submit first, with what List has
// learned of each, so that a filtered list skips the runs it knows do not
// match without reading them again (a final job's status and kind never
// change). It holds the ids submitted since it was opened and those read
// so far from the ids file, back to back in pointer-free buffers: however
// many it holds, the garbage collector has nothing in it to scan.
type runList struct {
	opened bool
	path   string
	added  idSeq // submitted since the list was opened, oldest first
	older  idSeq // read from the file, newest first
	from   int64 // the file's bytes before from are not read yet
	// carry is the end of a line cut by a block's start: the block
	// before has the rest.
	carry []byte
	// torn: the file does not end in a newline (an append cut short);
	// the next append starts with one, so that its line stays whole.
	torn bool
	// failWrite, when set, fails an append of line before it is written
	// (tests: a full disk).
	failWrite func(line string) error
}

// idSeq is a sequence of ids with what was learned of each.
type idSeq struct {
	names []byte   // the ids, back to back
	ends  []uint32 // ends[k]: where id k ends in names
	info  []uint8  // what List learned of id k (runInfo bits)
}

func (q *idSeq) push(id []byte) {
	q.names = append(q.names, id...)
	q.ends = append(q.ends, uint32(len(q.names)))
	q.info = append(q.info, 0)
}

func (q *idSeq) len() int { return len(q.ends) }

func (q *idSeq) name(k int) []byte {
	start := uint32(0)
	if k > 0 {
		start = q.ends[k-1]
	}
	return q.names[start:q.ends[k]]
}

// runInfo bits: a status code (0: not learned, and for jobs in memory,
// whose status changes), and two flags.
const (
	infoStatus    = 0x0f
	infoOtherKind = 0x40 // its kind is not bench.JobKind
	infoNotJob    = 0x80 // no readable job.json: a run made outside the backend
)

// statusCodes are the learned statuses by code; only final ones are learned.
var statusCodes = [...]bench.JobStatus{1: bench.StatusDone, 2: bench.StatusFailed, 3: bench.StatusCancelled}

func statusCode(status bench.JobStatus) uint8 {
	for c, s := range statusCodes {
		if c > 0 && s == status {
			return uint8(c)
		}
	}
	return 0
}

// open finds the ids file's end, once. A runs directory from before the
// file gets one, written whole, from its directory's names (sorted: run
// ids sort by their start time); that listing is the only cost that
// grows with the runs stored, and it is paid once per home.
func (l *runList) open(runsDir string) error {
	if l.opened {
		return nil
	}
	path := filepath.Join(runsDir, idsFile)
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		ids, lerr := runIDs(runsDir)
		if lerr != nil {
			return lerr
		}
		var data []byte
		for _, id := range ids {
			data = append(append(data, id...), '\n')
		}
		if err := atomicfile.WriteFile(path, data, 0o644); err != nil {
			return fmt.Errorf("write the list of runs: %w", err)
		}
		st, err = os.Stat(path)
	}
	if err != nil {
		return err
	}
	if st.Size() > 0 {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		last := make([]byte, 1)
		_, err = f.ReadAt(last, st.Size()-1)
		f.Close()
		if err != nil {
			return err
		}
		l.torn = last[0] != '\n'
	}
	l.path, l.from, l.opened = path, st.Size(), true
	return nil
}

// append records a new job's id: in the file first (synced), so that a
// job is never missing from the list after a crash; an id whose directory
// was never made reads as no job.
func (l *runList) append(id string) error {
	if err := l.write(id); err != nil {
		return err
	}
	l.added.push([]byte(id))
	return nil
}

// write appends line to the file, synced.
func (l *runList) write(line string) error {
	if l.failWrite != nil {
		if err := l.failWrite(line); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	data := make([]byte, 0, len(line)+2)
	if l.torn {
		data = append(data, '\n')
	}
	data = append(append(data, line...), '\n')
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// What was written, if anything, ends without a newline now.
		l.torn = true
		return err
	}
	l.torn = false
	return nil
}

// maxIndexLine bounds a line openIDs reads whole: a checkpoint names the
// jobs queued or running (MaxQueued and one), far fewer than this holds.
const maxIndexLine = 1 << 20

// checkpoint is the checkpoint line naming ids (sorted by the caller).
func checkpoint(ids []string) string {
	return "[" + strings.Join(ids, " ") + "]"
}

// openIDs reads the file back from its end to its newest whole checkpoint
// and answers the jobs open there, sorted: the checkpoint's, and those
// given or found after it, less those closed after them. found is false
// when the file has no whole checkpoint (a home from before them): the ids
// are then every one the file names but did not close.
func (l *runList) openIDs() (ids []string, found bool, err error) {
	f, err := os.Open(l.path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	closed := map[string]bool{}
	open := map[string]bool{}
	add := func(id string) {
		if !closed[id] {
			open[id] = true
		}
	}
	// visit takes one whole line; true ends the reading (a checkpoint).
	visit := func(line []byte) bool {
		switch {
		case len(line) > maxIndexLine:
			// No line of the backend's is this long.
		case len(line) >= 2 && line[0] == '[' && line[len(line)-1] == ']':
			named := strings.Fields(string(line[1 : len(line)-1]))
			for _, id := range named {
				if !validID(id) {
					return false // not one the backend wrote: read on
				}
			}
			for _, id := range named {
				add(id)
			}
			return true
		case len(line) > 1 && line[0] == '-' && validID(string(line[1:])):
			closed[string(line[1:])] = true
		case len(line) > 1 && line[0] == '+' && validID(string(line[1:])):
			add(string(line[1:]))
		case validID(string(line)):
			add(string(line))
		}
		return false
	}
	var tail []byte // the end of a line that an earlier block starts
	for end := st.Size(); ; {
		start := max(end-idsBlock, 0)
		buf := make([]byte, end-start, end-start+int64(len(tail)))
		if _, err := f.ReadAt(buf, start); err != nil {
			return nil, false, err
		}
		data := append(buf, tail...)
		end = start
		for {
			nl := bytes.LastIndexByte(data, '\n')
			if nl < 0 {
				break
			}
			if line := data[nl+1:]; len(line) > 0 && visit(line) {
				return slices.Sorted(maps.Keys(open)), true, nil
			}
			data = data[:nl]
		}
		if start == 0 {
			if len(data) > 0 && visit(data) {
				return slices.Sorted(maps.Keys(open)), true, nil
			}
			return slices.Sorted(maps.Keys(open)), false, nil
		}
		if len(data) > maxIndexLine {
			data = notAnID // no line of the backend's is this long
		}
		tail = append(tail[:0:0], data...)
	}
}

// has reports whether there is an i-th newest id, reading older blocks of
// the file as far as it needs.
func (l *runList) has(i int) (bool, error) {
	for i >= l.added.len()+l.older.len() {
		if l.from == 0 {
			return false, nil
		}
		if err := l.readBlock(); err != nil {
			return false, err
		}
	}
	return true, nil
}

// readBlock reads the block of the file before from, and the ids of the
// lines it completes, newest first.
func (l *runList) readBlock() error {
	start := max(l.from-idsBlock, 0)
	f, err := os.Open(l.path)
	if err != nil {
		return err
	}
	buf := make([]byte, l.from-start, l.from-start+int64(len(l.carry)))
	_, err = f.ReadAt(buf, start)
	f.Close()
	if err != nil {
		return err
	}
	data := append(buf, l.carry...)
	l.from = start
	// The block's first line began before it, unless the block starts
	// the file: it waits in carry for the block before.
	head := 0
	if start > 0 {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			l.keepCarry(data)
			return nil
		}
		head = nl + 1
	}
	for lines := data[head:]; len(lines) > 0; {
		end := len(lines)
		if lines[end-1] == '\n' {
			end--
		}
		nl := bytes.LastIndexByte(lines[:end], '\n')
		if line := lines[nl+1 : end]; validID(string(line)) {
			l.older.push(line)
		}
		lines = lines[:nl+1]
	}
	l.carry = l.carry[:0]
	if head > 0 {
		l.keepCarry(data[:head-1])
	}
	return nil
}

// notAnID stands for the end of a line longer than any id: whatever comes
// before it, the line is not an id ('/' is in none).
var notAnID = []byte("/")

// keepCarry keeps the end of a line read so far for the block before.
func (l *runList) keepCarry(part []byte) {
	if len(part) > maxIDLen {
		part = notAnID
	}
	l.carry = append(l.carry[:0], part...)
}

// at returns the sequence and position of the i-th newest id.
func (l *runList) at(i int) (*idSeq, int) {
	if n := l.added.len(); i < n {
		return &l.added, n - 1 - i
	}
	return &l.older, i - l.added.len()
}

func (l *runList) id(i int) string {
	q, k := l.at(i)
	return string(q.name(k))
}

// learn records what the i-th newest run's final job is.
func (l *runList) learn(i int, j *job) {
	if !isFinal(j.Status) {
		return
	}
	info := statusCode(j.Status)
	if j.Kind != bench.JobKind {
		info |= infoOtherKind
	}
	q, k := l.at(i)
	q.info[k] = info
}

// learnID is learn by id, for a job that has just become final: one of
// this backend's, so among the newest.
func (l *runList) learnID(id string, j *job) {
	for i := 0; i < l.added.len()+l.older.len(); i++ {
		if l.id(i) == id {
			l.learn(i, j)
			return
		}
	}
}

func (l *runList) notJob(i int) {
	q, k := l.at(i)
	q.info[k] = infoNotJob
}

// skip reports whether the i-th newest run is known not to match f (or not
// to be a job).
func (l *runList) skip(i int, f Filter) bool {
	q, k := l.at(i)
	info := q.info[k]
	switch {
	case info&infoNotJob != 0:
		return true
	case info&infoStatus == 0:
		return false // not learned: read it
	case f.Status != "" && statusCodes[info&infoStatus] != f.Status:
		return true
	case f.Kind == "":
		return false
	case info&infoOtherKind == 0:
		return f.Kind != bench.JobKind
	default:
		return f.Kind == bench.JobKind // another kind: read it to compare
	}
}
