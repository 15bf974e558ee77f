package bench

// JobStatus is where a job is in its life; JSON "status".
type JobStatus string

// Job statuses.
const (
	StatusQueued    JobStatus = "queued"
	StatusRunning   JobStatus = "running"
	StatusDone      JobStatus = "done"
	StatusFailed    JobStatus = "failed"
	StatusCancelled JobStatus = "cancelled"
)

// Job is one bench-serve job: this module's record of it (job.json); the
// API shows it as a JobView.
type Job struct {
	ID      string    `json:"id"`
	Kind    string    `json:"kind"`
	Profile string    `json:"profile"`
	Status  JobStatus `json:"status"`
	// Position is the place in the GPU queue while queued (1 = next).
	Position   int     `json:"position,omitempty"`
	CreatedAt  int64   `json:"createdAt"`
	StartedAt  int64   `json:"startedAt,omitempty"`
	FinishedAt int64   `json:"finishedAt,omitempty"`
	Progress   float64 `json:"progress"`
	Stage      string  `json:"stage,omitempty"`
	Message    string  `json:"message,omitempty"`
	Error      string  `json:"error,omitempty"`
	ExitCode   *int    `json:"exitCode,omitempty"`
	// RunID names the run directory and history entry once the run started.
	RunID    string   `json:"runId,omitempty"`
	Problems []string `json:"problems,omitempty"`
	LogTail  []string `json:"logTail,omitempty"`
}

// Job log event types.
const (
	EventStarted = "started"
	EventLog     = "log"
	EventStage   = "stage"
	EventDone    = "done"
	EventFailed  = "failed"
	// EventCancelled ends the log of a job stopped by DELETE /bench/:id.
	EventCancelled = "cancelled"
)

// JobEvent is one entry of a job's replayable event log.
type JobEvent struct {
	Seq      int      `json:"seq"`
	At       int64    `json:"at"`
	Type     string   `json:"type"`
	Message  string   `json:"message,omitempty"`
	Progress *float64 `json:"progress,omitempty"`
}

// Lease is the GPU lease as the API shows it.
type Lease struct {
	// Held is true while a job holds the GPU exclusively.
	Held   bool   `json:"held"`
	Holder string `json:"holder,omitempty"` // job id
	Since  int64  `json:"since,omitempty"`
	// Waiting counts jobs queued behind the holder.
	Waiting int `json:"waiting"`
	// Device is the probe's word: a device name, or "no GPU found".
	Device string `json:"device"`
}

// JobList is GET /bench's body: recent jobs, newest first, and the lease;
// in JSON the original's {jobs} of JobView, with the lease beside (api.go).
type JobList struct {
	Jobs  []Job
	Lease Lease
}
