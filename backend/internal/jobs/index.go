package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/logkey"
)

// What keeps the cost of the service flat however many runs are stored:
// only the jobs this backend runs (or recovers) are held in memory; a final
// job is read from its job.json when asked for, through a bounded cache;
// listing walks a sorted list of run ids newest first until its limit is
// filled; and start-up reads only the jobs the index has open.

// openIndexFile, in the runs directory of a home written before the ids
// file kept checkpoints, named the jobs whose job.json may not be final.
// The first start of such a home reads it (its ids file has no checkpoint
// yet), writes its first checkpoint, and removes it: from then on the ids
// file alone says which jobs are open (idsFile). A missing or unreadable
// one costs one full scan, as before.
const openIndexFile = ".open.json"

// finalCacheSize bounds the final jobs kept in memory for Get, List and
// the event replays (about 3 KB each with a full log tail): above the
// API's largest page (1000), so a client polling one reads it from disk
// once.
const finalCacheSize = 1024

// openIndex is the content of openIndexFile.
type openIndex struct {
	Open []string `json:"open"`
}

// maxIDLen bounds a run id (bench.NewRunID's are 23 bytes).
const maxIDLen = 128

// maxOpenIndexSize bounds what is read of openIndexFile: it named the
// jobs queued or running (MaxQueued and one), far fewer than this holds.
const maxOpenIndexSize = 1 << 20

// validID reports whether id can name a run directory: letters, digits,
// '.', '_' and '-', starting with a letter or digit, so that no id, from a
// URL or an index, reaches outside the runs directory or names a hidden
// file of it.
func validID(id string) bool {
	if id == "" || len(id) > maxIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// readOpenIndex reads openIndexFile: fs.ErrNotExist when there is none (a
// home from before it, or one it was migrated from), another error when it
// cannot be trusted.
func readOpenIndex(runsDir string) ([]string, error) {
	f, err := os.Open(filepath.Join(runsDir, openIndexFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxOpenIndexSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxOpenIndexSize {
		return nil, fmt.Errorf("%s is over %d bytes", openIndexFile, maxOpenIndexSize)
	}
	var idx openIndex
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, fmt.Errorf("%s does not decode: %w", openIndexFile, err)
	}
	if idx.Open == nil {
		return nil, fmt.Errorf("%s has no open list", openIndexFile)
	}
	for _, id := range idx.Open {
		if !validID(id) {
			return nil, fmt.Errorf("%s names %q, which is not a run id", openIndexFile, clip(id))
		}
	}
	return idx.Open, nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// runIDs lists the names in the runs directory that can be run ids,
// sorted (oldest first: run ids sort by their start time). Names, not
// entries: one that is not a directory is found out when it is read.
func runIDs(runsDir string) ([]string, error) {
	d, err := os.Open(runsDir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	ids := names[:0]
	for _, name := range names {
		if validID(name) {
			ids = append(ids, name)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// noteLocked appends line to the index (idsFile); a failure is logged and
// returned. The index is written once recovery knows the jobs.
func (s *Service) noteLocked(line string) error {
	if !s.indexReady {
		return nil
	}
	err := s.runs.write(line)
	if err != nil {
		s.opts.Logger.Error(fmt.Sprintf("jobs: write %s: %v", idsFile, err))
	}
	return err
}

// closeEntryLocked says in the index that id is no longer open: a
// checkpoint naming none when no job is open any more, so that the next
// start reads back no further; else -id. On failure the entry stays open:
// one read at the next start.
func (s *Service) closeEntryLocked(id string) {
	if len(s.live) == 0 && len(s.stray) == 0 {
		s.noteLocked(checkpoint(nil))
	} else {
		s.noteLocked("-" + id)
	}
}

// newFinalCache keeps the final jobs read last, least recently used out
// first; a nil job marks an id that is not a job, so asking again does not
// read the disk (or log) again.
func newFinalCache(size int) *lru.Cache[string, *job] {
	c, err := lru.New[string, *job](size)
	if err != nil {
		panic(err) // size is a positive constant
	}
	return c
}

// lookupLocked finds a job by id: in memory when this backend runs it,
// else from its job.json. Any id that is not a run id is ErrNotFound
// before the disk is touched.
func (s *Service) lookupLocked(id string) (*job, error) {
	if !validID(id) {
		return nil, ErrNotFound
	}
	if j, ok := s.live[id]; ok {
		return j, nil
	}
	if j, ok := s.final.Get(id); ok {
		if j == nil {
			return nil, ErrNotFound
		}
		return j, nil
	}
	j, err := s.readFinal(id)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			s.final.Add(id, nil)
		}
		return nil, err
	}
	s.final.Add(id, j)
	return j, nil
}

// readFinal reads a job this backend does not run from its job.json. A
// directory without a readable one is not a job (ErrNotFound; a damaged
// job.json is logged); an error reading it is returned as such.
func (s *Service) readFinal(id string) (*job, error) {
	dir := filepath.Join(s.opts.RunsDir, id)
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return nil, ErrNotFound // a link is not followed out of the runs directory
	}
	dj, err := readJob(dir)
	var readErr *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, ErrNotFound
	case errors.As(err, &readErr):
		return nil, err
	case err != nil: // it does not decode
		s.opts.Logger.Warn(fmt.Sprintf("jobs: skip %s: %s: %v", id, jobFile, err), logkey.Job, id)
		return nil, ErrNotFound
	case dj.ID != id:
		s.opts.Logger.Warn(fmt.Sprintf("jobs: skip %s: its %s names job %q", id, jobFile, clip(dj.ID)), logkey.Job, id)
		return nil, ErrNotFound
	}
	j := &job{jobState: jobState{Job: dj.Job}, dir: dir, log: finishedEventLog(dir), done: closedChan}
	if !isFinal(j.Status) {
		// Not in the open index, so no start recovered it: hand edits,
		// or a copy from another home. No process of this backend runs
		// it; it reads as recovery would have left it, and goes into
		// the index, so the next start settles it (keeping its record).
		s.opts.Logger.Warn(fmt.Sprintf("jobs: %s: %s says %s, but the job was not open in the index; the next start recovers it", id, jobFile, j.Status), logkey.Job, id)
		if _, ok := s.stray[id]; !ok && s.indexReady {
			s.stray[id] = struct{}{}
			s.noteLocked("+" + id)
		}
		msg := MsgStoppedDuringRun
		if j.Status == bench.StatusQueued {
			msg = MsgStoppedQueued
		}
		j.Status, j.Stage, j.Message, j.Error = bench.StatusFailed, string(bench.StatusFailed), msg, msg
	}
	return j, nil
}

// closedChan is the done channel of every job read from disk.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// retireLocked lets go of a job whose final job.json is written: it is
// read from disk from now on, and is no longer open in the index.
func (s *Service) retireLocked(j *job) {
	delete(s.live, j.ID)
	s.final.Add(j.ID, j)
	s.runs.learnID(j.ID, j)
	s.closeEntryLocked(j.ID)
}
