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

	"github.com/mlx-bun/mlx-metrics/shared/atomicfile"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// Files of a job's directory, next to the runner's run.json, report.md and
// logs/.
const (
	jobFile    = "job.json"
	eventsFile = "events.ndjson"
	planFile   = "plan.json"
	recordFile = "run.json"
	ReportFile = "report.md"
)

// diskJob is job.json: the job as the API shows it, and the runner process
// while one runs, so that recovery after a crash of the backend can tell an
// orphaned runner that still runs (and holds the GPU) from one long gone.
type diskJob struct {
	bench.Job
	Runner *runnerProc `json:"runner,omitempty"`
}

// runnerProc identifies a runner process: a pid alone could be another
// process's by the time recovery looks, so its start time goes with it.
type runnerProc struct {
	Pid int `json:"pid"`
	// Pgid is its process group (it leads one of its own).
	Pgid int `json:"pgid"`
	// Start is the process's start time as the system reports it
	// (procStart); empty when it could not be read.
	Start string `json:"start"`
}

// writeJSON writes v to path whole or not at all, so a crash never leaves
// half a file for recovery to trip on.
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(data, '\n'), 0o644)
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// readRecord reads the runner's run.json.
func readRecord(dir string) (bench.RunRecord, error) {
	var r bench.RunRecord
	err := readJSON(filepath.Join(dir, recordFile), &r)
	return r, err
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
