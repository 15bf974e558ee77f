// Package jobs runs bench-serve jobs: each takes the GPU lease exclusively
// (queueing behind the holder, first in first out), runs the runner as its
// own process (isolation: task), streams its output into a per-job event log
// kept on disk, and cancels with SIGTERM, then SIGKILL after a grace period.
//
// It is three parts that Service composes under its one mutex: an event
// log per job (eventlog.go: append with the next seq, read after a seq or
// from a byte offset); a pure transition (transition.go) from a job's state
// and what happened to its next state and the events that say so, with no
// I/O, process or clock of its own; and a supervisor per runner process
// (supervisor.go: start, wait, SIGTERM then SIGKILL after the grace period).
// Service feeds each input to the transition, appends the events it returns
// and asks the supervisor to start or stop the process.
//
// Every job has a directory <runs>/<id>/ holding job.json (its state),
// events.ndjson (its replayable log), plan.json (the plan as submitted) and
// what the runner writes there (run.json, report.md, logs/). Recovery after
// a restart of the backend reads the jobs the index has open (idsFile);
// final jobs are read from disk when asked for.
package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/gpu/lease"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/logkey"
	"github.com/mlx-bun/mlx-metrics/shared/plural"
)

// Errors of the service, for the API to map to statuses.
var (
	ErrNotFound  = errors.New("no such job")
	ErrQueueFull = errors.New("the bench queue is full")
	ErrFinished  = errors.New("the job has already finished")
	ErrClosed    = errors.New("the backend is shutting down")
)

// Messages a person reads on jobs the backend could not see through.
const (
	MsgStoppedDuringRun = "the backend stopped during the run"
	MsgStoppedQueued    = "the backend stopped before the run started"
)

// Defaults of Options.
const (
	DefaultGrace     = 70 * time.Second
	DefaultMaxQueued = 8
	logTailLines     = 40
)

// Options configure a Service.
type Options struct {
	// RunsDir holds one directory per job (<home>/metrics/bench/runs).
	RunsDir string
	// Lease is the GPU lease every bench-serve job holds while it runs.
	Lease *lease.Lease
	// Runner is the argv that starts the runner, before its flags
	// (--plan, --out, --id, --profile); default: this executable with
	// `bench run`.
	Runner []string
	// Env is added to the runner's environment.
	Env []string
	// Grace is how long a cancelled runner has between SIGTERM and SIGKILL.
	Grace time.Duration
	// MaxQueued bounds the jobs waiting for the GPU; Submit answers
	// ErrQueueFull beyond it.
	MaxQueued int
	// Clock is the service's time (clock.Real when nil); tests drive the
	// SIGKILL grace period with it.
	Clock clock.Clock
	// Finished receives the record of every run that wrote one (complete,
	// incomplete or cancelled), to keep in history. An error fails the job.
	Finished func(rec bench.RunRecord, runDir string) error
	// Logger reports what no job owns (a corrupt job.json), and a job's
	// own failures to save or record (slog.Default() when nil).
	Logger *slog.Logger
}

// Service is the bench-serve job service.
type Service struct {
	opts Options
	wg   sync.WaitGroup
	// writeJSON writes job.json (and plan.json); tests make it fail as a
	// full disk would.
	writeJSON func(path string, v any) error

	mu sync.Mutex
	// live holds the jobs whose job.json may not be final: those this
	// backend runs or recovers, and those whose final save failed. They
	// are the jobs open in the index.
	live  map[string]*job
	final *lru.Cache[string, *job] // final jobs read from disk (newFinalCache)
	runs  runList
	// stray holds the jobs read from disk whose job.json is not final
	// though the index did not name them: the next start recovers them.
	stray map[string]struct{}
	// indexReady is false while recovery reads the jobs: the index
	// is written once recovery knows them all.
	indexReady bool
	closing    bool
	lastID     string // the id Submit gave last
	// changed is closed at the next change of any job (Watch); nil until
	// someone watches.
	changed chan struct{}
}

// job is a job's state, which only transition changes while the job is
// live, and what running it needs; all fields are guarded by Service.mu.
// A final job is not changed again (the one exception: Close saving an
// unsaved one), so one read from disk serves every caller.
type job struct {
	jobState
	dir     string
	ticket  *lease.Ticket
	sup     *supervisor // the runner process, once started
	log     *eventLog
	unsaved bool          // its final job.json could not be written; Close retries
	done    chan struct{} // closed at the final status
}

// New opens the service over opts.RunsDir and recovers the jobs there: a job
// found queued or running becomes failed, since no process of this backend
// runs it.
func New(opts Options) (*Service, error) {
	if opts.Lease == nil {
		return nil, errors.New("jobs: no GPU lease")
	}
	if len(opts.Runner) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("jobs: find own executable for the runner: %w", err)
		}
		opts.Runner = []string{exe, "bench", "run"}
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.MaxQueued <= 0 {
		opts.MaxQueued = DefaultMaxQueued
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	opts.Logger = logging.Or(opts.Logger)
	if err := os.MkdirAll(opts.RunsDir, 0o755); err != nil {
		return nil, err
	}
	s := &Service{opts: opts, live: map[string]*job{}, final: newFinalCache(finalCacheSize),
		stray: map[string]struct{}{}, writeJSON: writeJSON}
	if err := s.recover(); err != nil {
		return nil, err
	}
	return s, nil
}

// Submit queues a job for profile's plan and returns it: running when the
// GPU was free, else queued with its position.
func (s *Service) Submit(profile string, plan bench.Plan) (bench.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return bench.Job{}, ErrClosed
	}
	queued := 0
	for _, j := range s.live {
		if j.Status == bench.StatusQueued {
			queued++
		}
	}
	if queued >= s.opts.MaxQueued {
		return bench.Job{}, fmt.Errorf("%w: %s for the GPU already; cancel one or try again when one ends", ErrQueueFull, plural.Count(queued, "job waits", "jobs wait"))
	}
	now := s.opts.Clock.Now()
	id := s.newIDLocked(now)
	// In the index (listed, and open) before anything else, so that no
	// job is missing from it after a crash, and a crash from here on
	// leaves the job to recovery.
	if err := s.runs.open(s.opts.RunsDir); err != nil {
		return bench.Job{}, err
	}
	if err := s.runs.append(id); err != nil {
		return bench.Job{}, err
	}
	// Mkdir, not MkdirAll: the directory is this job's alone, and a
	// failed submit removes it, leaving no half job for recovery (and
	// closes its entry: List passes over an id with no directory).
	dir := filepath.Join(s.opts.RunsDir, id)
	if err := os.Mkdir(dir, 0o755); err != nil {
		s.closeEntryLocked(id)
		return bench.Job{}, err
	}
	fail := func(err error) (bench.Job, error) {
		os.RemoveAll(dir)
		s.closeEntryLocked(id)
		return bench.Job{}, err
	}
	if err := s.writeJSON(filepath.Join(dir, planFile), plan); err != nil {
		return fail(err)
	}
	ticket, err := s.opts.Lease.Enqueue(id)
	if err != nil {
		return fail(err)
	}
	events, err := openEventLog(dir, 0)
	if err != nil {
		ticket.Release()
		return fail(err)
	}
	j := &job{
		jobState: jobState{
			Job: bench.Job{ID: id, Kind: bench.JobKind, Profile: profile, Status: bench.StatusQueued,
				CreatedAt: now.UnixMilli(), RunID: id, Stage: "queued"},
			cells: len(plan.Cells), phases: planPhases(plan), phase: -1,
		},
		dir: dir, ticket: ticket, log: events, done: make(chan struct{}),
	}
	s.live[id] = j
	select {
	case <-ticket.Ready():
		s.applyLocked(j, leased{device: s.opts.Lease.State().Device})
	default:
		s.applyLocked(j, queuedBehind{holder: s.opts.Lease.State().Holder, position: s.opts.Lease.Position(id)})
	}
	s.saveLocked(j)
	s.wg.Add(1)
	go s.run(j)
	return s.viewLocked(j), nil
}

// newIDLocked names a new job by its start time (bench.NewRunID). List
// orders jobs by id, so a job submitted in the same second as the one
// before gets a suffix after that one's, not a random one.
func (s *Service) newIDLocked(now time.Time) string {
	id := bench.NewRunID(now, suffix())
	prefix := bench.NewRunID(now, "")
	if last, ok := strings.CutPrefix(s.lastID, prefix); ok && id <= s.lastID {
		if n, err := strconv.ParseUint(last, 16, 32); err == nil && n < 0xffffff {
			id = prefix + fmt.Sprintf("%06x", n+1)
		}
	}
	s.lastID = id
	return id
}

func suffix() string {
	b := make([]byte, 3)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Get returns one job.
func (s *Service) Get(id string) (bench.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.lookupLocked(id)
	if err != nil {
		return bench.Job{}, err
	}
	return s.viewLocked(j), nil
}

// Filter selects jobs for List; empty fields match anything.
type Filter struct {
	Kind   string
	Status bench.JobStatus
	// Limit bounds the answer (0: all).
	Limit int
}

func (f Filter) match(kind string, status bench.JobStatus) bool {
	return (f.Kind == "" || kind == f.Kind) && (f.Status == "" || status == f.Status)
}

// List returns the jobs that match f, newest first (in the order of the
// submits, which is the order of their ids unless the clock went back). It
// reads the ids file from its end until the limit is filled, so its cost
// follows the limit, not the runs stored.
func (s *Service) List(f Filter) []bench.Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []bench.Job{}
	if f.Status == bench.StatusQueued || f.Status == bench.StatusRunning {
		// Only the jobs in memory can be queued or running.
		for _, j := range s.live {
			if f.match(j.Kind, j.Status) {
				out = append(out, s.viewLocked(j))
			}
		}
		slices.SortFunc(out, func(a, b bench.Job) int { return strings.Compare(b.ID, a.ID) })
		if f.Limit > 0 && len(out) > f.Limit {
			out = out[:f.Limit]
		}
		return out
	}
	if err := s.runs.open(s.opts.RunsDir); err != nil {
		s.opts.Logger.Error(fmt.Sprintf("jobs: list the runs: %v", err))
		return out
	}
	for i := 0; f.Limit <= 0 || len(out) < f.Limit; i++ {
		if more, err := s.runs.has(i); !more {
			if err != nil {
				s.opts.Logger.Error(fmt.Sprintf("jobs: list the runs: %v", err))
			}
			break
		}
		if s.runs.skip(i, f) {
			continue
		}
		id := s.runs.id(i)
		if j, ok := s.live[id]; ok {
			if f.match(j.Kind, j.Status) {
				out = append(out, s.viewLocked(j))
			}
			continue
		}
		j, err := s.lookupLocked(id)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				s.runs.notJob(i)
			} else {
				s.opts.Logger.Warn(fmt.Sprintf("jobs: list: %s: %v", id, err), logkey.Job, id)
			}
			continue
		}
		s.runs.learn(i, j)
		if f.match(j.Kind, j.Status) {
			out = append(out, s.viewLocked(j))
		}
	}
	return out
}

// Dir is the job's directory (its run directory).
func (s *Service) Dir(id string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.lookupLocked(id)
	if err != nil {
		return "", err
	}
	return j.dir, nil
}

// Done is closed once the job has its final status.
func (s *Service) Done(id string) (<-chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.lookupLocked(id)
	if err != nil {
		return nil, err
	}
	return j.done, nil
}

// Events returns the job's events after seq (0: from the start), a channel
// closed at the next event, and whether the log is complete (the job has
// ended, so no event will follow).
func (s *Service) Events(id string, after int) (evs []bench.JobEvent, changed <-chan struct{}, ended bool, err error) {
	evs, _, changed, ended, err = s.EventsAt(id, after, 0)
	return evs, changed, ended, err
}

// EventsAt is Events for a follower: it reads the log from byte offset off
// (0, or the next offset of its previous call), so following a long job
// reads each event once.
func (s *Service) EventsAt(id string, after int, off int64) (evs []bench.JobEvent, next int64, changed <-chan struct{}, ended bool, err error) {
	s.mu.Lock()
	j, err := s.lookupLocked(id)
	if err != nil {
		s.mu.Unlock()
		return nil, off, nil, false, err
	}
	changed, ended, events := j.log.watch(), isFinal(j.Status), j.log
	s.mu.Unlock()
	// Read after taking changed: an event written meanwhile closes it.
	evs, next, err = events.read(after, off)
	return evs, next, changed, ended, err
}

// Cancel stops a job: a queued one leaves the queue at once; a running one
// gets SIGTERM (its runner stops its servers and writes its record), then
// SIGKILL after the grace period; one whose runner has exited already ends
// as its run did. It returns the job as it stands.
func (s *Service) Cancel(id string) (bench.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.lookupLocked(id)
	if err != nil {
		return bench.Job{}, err
	}
	if isFinal(j.Status) {
		return s.viewLocked(j), fmt.Errorf("%w (%s)", ErrFinished, j.Status)
	}
	s.stopLocked(j, false)
	return s.viewLocked(j), nil
}

// stopLocked cancels j, or, for shutdown, stops it as failed: the user did
// not ask, the backend went away (the same word a restart would give). A
// queued job ends at once; a running one's runner gets SIGTERM (or gets it
// as it starts: runProcess).
func (s *Service) stopLocked(j *job, shutdown bool) {
	was := j.cancelled
	s.applyLocked(j, cancel{shutdown: shutdown, grace: s.opts.Grace})
	if was || !j.cancelled || isFinal(j.Status) {
		return
	}
	if j.sup != nil {
		s.terminateLocked(j)
	}
	s.saveLocked(j)
}

// Close stops every job (queued and running ones end failed with
// MsgStoppedQueued / MsgStoppedDuringRun, as after a restart, with the
// runner's record kept) and waits until their runners have exited or ctx
// ends. Jobs still running then are left to recovery.
func (s *Service) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	s.notifyLocked() // the list's followers end
	for _, j := range s.live {
		if !isFinal(j.Status) {
			s.stopLocked(j, true)
		}
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	// The disk may have room again: a final state that could not be
	// saved is tried once more, so a restart does not misreport it.
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range s.live {
		if j.unsaved && s.saveLocked(j) == nil {
			j.unsaved = false
			s.retireLocked(j)
		}
	}
	return nil
}

// Grace is how long a cancelled runner has between SIGTERM and SIGKILL
// (Options.Grace, or its default).
func (s *Service) Grace() time.Duration { return s.opts.Grace }

// viewLocked is the job as the API shows it, with its queue position.
func (s *Service) viewLocked(j *job) bench.Job {
	v := j.Job
	v.Problems = append([]string(nil), j.Problems...)
	v.LogTail = append([]string(nil), j.LogTail...)
	if v.ExitCode != nil {
		c := *v.ExitCode
		v.ExitCode = &c
	}
	if v.Status == bench.StatusQueued {
		v.Position = s.opts.Lease.Position(j.ID)
	}
	return v
}

func isFinal(status bench.JobStatus) bool {
	switch status {
	case bench.StatusDone, bench.StatusFailed, bench.StatusCancelled:
		return true
	}
	return false
}

// applyLocked feeds in to j's transition, appends the events it returns to
// j's log, and carries out an end: the GPU lease goes first, so whoever
// sees the job end finds it passed on; then the final job.json (when it
// cannot be written, the job fails for that, and Close tries again), the
// final event, and the job leaves memory.
func (s *Service) applyLocked(j *job, in input) {
	now := s.opts.Clock.Now()
	wasFinal := isFinal(j.Status)
	defer s.notifyLocked()
	next, evs := transition(j.jobState, now, in)
	j.jobState = next
	ended := !wasFinal && isFinal(j.Status)
	if ended {
		if j.ticket != nil {
			j.ticket.Release()
		}
		if err := s.saveLocked(j); err != nil {
			j.unsaved = true
			j.jobState, evs = transition(j.jobState, now, saveFailed{err})
		}
	}
	for _, ev := range evs {
		if err := j.log.append(ev); err != nil {
			s.opts.Logger.Error(fmt.Sprintf("jobs: %s: event log: %v", j.ID, err), logkey.Job, j.ID)
		}
	}
	if ended {
		j.log.close()
		close(j.done)
		if !j.unsaved {
			s.retireLocked(j)
		}
	}
}

// saveLocked writes job.json. A failure is logged and returned; only the
// final save acts on it (applyLocked): a later save brings the file up to
// date anyway.
func (s *Service) saveLocked(j *job) error {
	v := diskJob{Job: j.Job, Runner: j.runner}
	v.Position = 0
	err := s.writeJSON(filepath.Join(j.dir, jobFile), v)
	if err != nil {
		s.opts.Logger.Error(fmt.Sprintf("jobs: %s: save: %v", j.ID, err), logkey.Job, j.ID)
	}
	return err
}
