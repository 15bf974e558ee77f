package jobs

import (
	"encoding/json"
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

// readJob reads dir's job.json (decodeJob); an error reading the file is
// an *fs.PathError, one decoding it is not.
func readJob(dir string) (diskJob, error) {
	data, err := os.ReadFile(filepath.Join(dir, jobFile))
	if err != nil {
		return diskJob{}, err
	}
	return decodeJob(data)
}

// decodeJob decodes a job.json. A runner it names that no backend started
// (a pid below 2, a process group other than its own, which every runner
// leads, or no start time) is dropped, so that recovery never signals it:
// SIGTERM to group 1 is kill(-1), every process the user owns, and to group
// 0 the backend's own.
func decodeJob(data []byte) (diskJob, error) {
	var dj diskJob
	if err := json.Unmarshal(data, &dj); err != nil {
		return diskJob{}, err
	}
	if p := dj.Runner; p != nil && (p.Pid < 2 || p.Pgid != p.Pid || p.Start == "") {
		dj.Runner = nil
	}
	return dj, nil
}

// readRecord reads the runner's run.json.
func readRecord(dir string) (bench.RunRecord, error) {
	var r bench.RunRecord
	err := readJSON(filepath.Join(dir, recordFile), &r)
	return r, err
}
