package jobs

import (
	"sort"
	"strings"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// runList is every run id, oldest first (run ids sort by their start
// time), built from the runs directory's names at the first List and kept
// up to date by Submit, with what List has learned of each run, so that a
// filtered list skips the runs it knows do not match without reading them
// again (a final job's status and kind never change).
//
// It holds no pointers (the ids back to back in one buffer), so however
// many runs there are, the garbage collector has nothing in it to scan:
// a list of 100 k runs costs each List nothing.
type runList struct {
	built bool
	names []byte   // the ids, back to back
	ends  []uint32 // ends[i]: where id i ends in names
	info  []uint8  // what List learned of run i (runInfo bits)
}

// runInfo bits: a status code (0: not learned, and for jobs in memory,
// whose status changes), and two flags.
const (
	infoStatus    = 0x0f
	infoOtherKind = 0x40 // its kind is not bench.JobKind
	infoNotJob    = 0x80 // no readable job.json: a run made outside the backend
)

// statusCodes are the learned statuses by code; only final ones are learned.
var statusCodes = [...]string{1: bench.StatusDone, 2: bench.StatusFailed, 3: bench.StatusCancelled}

func statusCode(status string) uint8 {
	for c, s := range statusCodes {
		if c > 0 && s == status {
			return uint8(c)
		}
	}
	return 0
}

func (l *runList) build(runsDir string) error {
	if l.built {
		return nil
	}
	ids, err := runIDs(runsDir)
	if err != nil {
		return err
	}
	size := 0
	for _, id := range ids {
		size += len(id)
	}
	l.names = make([]byte, 0, size)
	l.ends = make([]uint32, len(ids))
	l.info = make([]uint8, len(ids))
	for i, id := range ids {
		l.names = append(l.names, id...)
		l.ends[i] = uint32(len(l.names))
	}
	l.built = true
	return nil
}

func (l *runList) len() int { return len(l.ends) }

func (l *runList) name(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = l.ends[i-1]
	}
	return l.names[start:l.ends[i]]
}

func (l *runList) id(i int) string { return string(l.name(i)) }

// find returns the index of id, or where it would go.
func (l *runList) find(id string) (int, bool) {
	i := sort.Search(l.len(), func(i int) bool { return strings.Compare(string(l.name(i)), id) >= 0 })
	return i, i < l.len() && string(l.name(i)) == id
}

// add puts a new id in its place: at the end, but for a clock that went
// back (then the ids after it move, once).
func (l *runList) add(id string) {
	if !l.built {
		return // the directory's names will have it
	}
	i, ok := l.find(id)
	if ok {
		return
	}
	start := uint32(0)
	if i > 0 {
		start = l.ends[i-1]
	}
	l.names = append(l.names[:start], append([]byte(id), l.names[start:]...)...)
	l.ends = append(l.ends, 0)
	copy(l.ends[i+1:], l.ends[i:])
	l.ends[i] = start
	for k := i; k < len(l.ends); k++ {
		l.ends[k] += uint32(len(id))
	}
	l.info = append(l.info, 0)
	copy(l.info[i+1:], l.info[i:])
	l.info[i] = 0
}

// learn records what run i's final job is.
func (l *runList) learn(i int, j *job) {
	if !isFinal(j.Status) {
		return
	}
	info := statusCode(j.Status)
	if j.Kind != bench.JobKind {
		info |= infoOtherKind
	}
	l.info[i] = info
}

// learnID is learn by id, for a job that has just become final.
func (l *runList) learnID(id string, j *job) {
	if !l.built {
		return
	}
	if i, ok := l.find(id); ok {
		l.learn(i, j)
	}
}

func (l *runList) notJob(i int) { l.info[i] = infoNotJob }

// skip reports whether run i is known not to match f (or not to be a job).
func (l *runList) skip(i int, f Filter) bool {
	info := l.info[i]
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
