package jobs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/logkey"
)

// recover settles the jobs of an earlier backend, those the index has open
// (idsFile; in a home from before its checkpoints, those openIndexFile
// names; all the run directories when neither can be trusted): a final
// one is left as it is; a queued one fails; a running one whose runner is
// gone fails, with the record its runner left kept in history; one whose
// runner still runs (the backend was killed, the runner was not) holds
// the GPU lease until that runner has stopped (recoverOrphan). Then a
// checkpoint names the jobs still in memory, and an openIndexFile that
// was read is removed: the ids file says it all from then on.
func (s *Service) recover() error {
	if err := s.runs.open(s.opts.RunsDir); err != nil {
		return fmt.Errorf("open the list of runs: %w", err)
	}
	ids, indexed, err := s.runs.openIDs()
	if err != nil {
		return fmt.Errorf("read the list of runs: %w", err)
	}
	migrate := false
	if !indexed {
		ids, err = readOpenIndex(s.opts.RunsDir)
		indexed, migrate = err == nil, err == nil
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				s.opts.Logger.Warn(fmt.Sprintf("jobs: %v: reading every job instead", err))
			}
			if ids, err = runIDs(s.opts.RunsDir); err != nil {
				return err
			}
		}
	}
	for _, id := range ids {
		if err := s.recoverJob(id); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.indexReady = true
	if indexed && !migrate && len(ids) == 0 && len(s.live) == 0 {
		return nil // the index says it already: no write, no sync
	}
	open := make([]string, 0, len(s.live))
	for id := range s.live {
		open = append(open, id)
	}
	sort.Strings(open)
	// A failure leaves the index as it was: the next start reads a few
	// final jobs again, or the old open index, or scans.
	if s.noteLocked(checkpoint(open)) == nil {
		if err := os.Remove(filepath.Join(s.opts.RunsDir, openIndexFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.opts.Logger.Warn(fmt.Sprintf("jobs: remove %s, which the list of runs replaces: %v", openIndexFile, err))
		}
	}
	return nil
}

// recoverJob settles one job of an earlier backend (see recover).
func (s *Service) recoverJob(id string) error {
	dir := filepath.Join(s.opts.RunsDir, id)
	dj, err := readJob(dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			s.opts.Logger.Warn(fmt.Sprintf("jobs: skip %s: %v", dir, err))
		}
		return nil // a run made outside the backend, or not a job
	}
	if dj.ID != id {
		s.opts.Logger.Warn(fmt.Sprintf("jobs: skip %s: its %s names job %q", dir, jobFile, clip(dj.ID)))
		return nil
	}
	if isFinal(dj.Status) {
		return nil // read from disk when asked for
	}
	// Only a job that gets its final event needs its log's last seq:
	// the logs of jobs already final are not read at start-up.
	events, err := openEventLog(dir, lastSeq(dir))
	if err != nil {
		return err
	}
	j := &job{jobState: jobState{Job: dj.Job}, dir: dir, log: events, done: make(chan struct{})}
	s.mu.Lock()
	s.live[j.ID] = j
	s.mu.Unlock()
	// readJob has dropped a runner it could not trust (no start time, a
	// foreign group): one named here may be signalled.
	if p := dj.Runner; j.Status == bench.StatusRunning && p != nil && running(*p) {
		return s.recoverOrphan(j, *p)
	}
	s.keepLeftRecord(j)
	s.mu.Lock()
	s.applyLocked(j, recovered{})
	s.mu.Unlock()
	return nil
}

// keepLeftRecord keeps in history the record a runner finished before the
// backend saw it end, rather than lose it.
func (s *Service) keepLeftRecord(j *job) {
	if rec, err := readRecord(j.dir); err == nil && rec.FinishedAt > 0 {
		if rec.ID == "" {
			rec.ID = j.ID
		}
		s.keepRecord(j, rec)
	}
}

// recoverOrphan takes the GPU lease for a job whose runner outlived the
// backend (first in the queue: recovery runs before any Submit), and has
// the runner stopped as a cancel would (orphan.terminate, orphan.reap).
// Only then is the lease free, and the job failed with the record kept.
func (s *Service) recoverOrphan(j *job, p runnerProc) error {
	ticket, err := s.opts.Lease.Enqueue(j.ID)
	if err != nil {
		return err
	}
	s.mu.Lock()
	j.ticket = ticket
	s.applyLocked(j, orphaned{pid: p.Pid, grace: s.opts.Grace})
	s.saveLocked(j)
	s.mu.Unlock()
	o := orphan{proc: p, clock: s.opts.Clock, grace: s.opts.Grace}
	if err := o.terminate(); err != nil {
		s.opts.Logger.Warn(fmt.Sprintf("jobs: %s: SIGTERM to orphaned runner group %d: %v", j.ID, p.Pgid, err), logkey.Job, j.ID)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		lingered := o.reap(func() {
			s.mu.Lock()
			s.applyLocked(j, graceOver{grace: s.opts.Grace, orphan: true})
			s.mu.Unlock()
		})
		s.keepLeftRecord(j)
		j.ticket.Release()
		_, recErr := readRecord(j.dir)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.applyLocked(j, orphanGone{pid: p.Pid, grace: s.opts.Grace, lingered: lingered, noRecord: recErr != nil})
	}()
	return nil
}
