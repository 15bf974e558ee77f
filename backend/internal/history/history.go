// Package history keeps the compact record of every finished bench-serve run
// in Badger at <home>/metrics/history.
//
// Keys are laid out so that the listing the API serves most (newest first,
// a page at a time) is a reverse prefix iteration that stops after limit
// entries, never a scan of the whole history:
//
//	e/<startedAt, 16 hex digits>/<id>  →  the entry as JSON
//	i/<id>                             →  its e/ key
package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/backend/internal/redact"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/logkey"
)

// ErrNotFound is Get's answer for an unknown or malformed id.
var ErrNotFound = errors.New("no such run in history")

// IDPattern is what a run id may look like (bench.RunIDPattern).
var IDPattern = bench.RunIDPattern

const (
	entryPrefix = "e/"
	indexPrefix = "i/"
)

// Store is the history database.
type Store struct {
	db        *badger.DB
	dir       string
	freeSpace func(dir string) (uint64, error)
	log       *slog.Logger

	salvage *Salvage  // what Open did about damaged tables, if anything
	upgrade []Upgrade // what Open did with the original module's files

	mu         sync.Mutex
	unreadable map[string]bool // ids of entries met unreadable
}

// ErrDamaged is a read that Badger gave up on with a panic: damaged files.
var ErrDamaged = errors.New("the history's files are damaged")

// recoverDamage turns a panic of Badger reading damaged files, in the
// calling goroutine, into ErrDamaged in *err.
func recoverDamage(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w (Badger gave up reading them: %v)", ErrDamaged, r)
	}
}

// Salvaged reports what Open did about a damaged history (nil: it was not).
func (s *Store) Salvaged() *Salvage { return s.salvage }

// Upgraded reports what Open imported of the original module's history
// files (upgrade.go); nil when it found none to import.
func (s *Store) Upgraded() []Upgrade { return s.upgrade }

// Options configure a Store.
type Options struct {
	// Logger reports a salvage, an upgrade and Badger's warnings
	// (slog.Default() when nil).
	Logger *slog.Logger
	// Clock dates a salvage and an upgrade, and bounds imported times;
	// the system clock when nil.
	Clock clock.Clock
	// FreeSpace says how many bytes may still be written on the
	// filesystem holding dir (tests fake a full disk); statfs when nil.
	// Where it cannot tell, writes and Close go ahead.
	FreeSpace func(dir string) (uint64, error)
	// RunsDir holds the run directories (<id>/run.json) whose finished
	// runs the history must have: a history that opens without some of
	// them is salvaged, they put back. Empty: not checked.
	RunsDir string
}

// Open opens (creating) the history at dir.
func Open(dir string, opts Options) (*Store, error) {
	log := logging.Or(opts.Logger).With(logkey.Path, dir)
	if opts.FreeSpace == nil {
		opts.FreeSpace = freeSpace
	}
	dbOpts := badger.DefaultOptions(dir).
		WithLogger(quietLogger{log}).
		// Entries are a few KB; small tables keep memory and start-up
		// modest on a laptop that also runs models.
		WithMemTableSize(8 << 20).
		WithValueLogFileSize(64 << 20).
		WithNumVersionsToKeep(1)
	// Damaged files are found before Badger opens them (checkFiles), and
	// the history rebuilt from what the tables and the run directories
	// still hold; a history that opens lacking runs whose run.json is on
	// disk (a lost MANIFEST entry, write-ahead log or value log) is
	// salvaged the same way from the open database.
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	now := opts.Clock.Now()
	// The original module's files, in this folder, go aside before Badger
	// opens it; they are imported once it has.
	if aside, err := moveOriginal(dir, now); err != nil {
		log.Warn(fmt.Sprintf("history: moving the original module's history files aside (into %s): %v", aside, err))
	}
	var sv *Salvage
	if cause := checkFiles(dir, dbOpts); errors.Is(cause, ErrDamaged) {
		log.Warn(fmt.Sprintf("history: %s is damaged, rebuilding it from what it still reads: %v", dir, cause))
		got, err := rebuild(dir, dbOpts, cause, opts.RunsDir, now)
		log.Warn(fmt.Sprintf("history: salvage: %+v", got))
		if err != nil {
			return nil, fmt.Errorf("open history: %w", err)
		}
		sv = &got
	}
	var db *badger.DB
	err := guardFault(func() (err error) {
		db, err = badger.Open(dbOpts)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open history: %w", err)
	}
	missing, err := runsOnDisk(db, opts.RunsDir)
	if err != nil {
		log.Error(fmt.Sprintf("history: reading the run directories: %v", err))
	}
	if len(missing) > 0 {
		cause := fmt.Errorf("%w: it lacks %d finished runs whose run.json is on disk", ErrDamaged, len(missing))
		log.Warn(fmt.Sprintf("history: %s is damaged, salvaging what it still reads: %v", dir, cause))
		var got Salvage
		if db, got = salvage(db, dir, dbOpts, cause, now, missing); db == nil {
			return nil, fmt.Errorf("open history after salvaging it: %w", cause)
		}
		log.Warn(fmt.Sprintf("history: salvage: %+v", got))
		if sv != nil {
			got.Cause = sv.Cause + "; then " + got.Cause
		}
		sv = &got
	}
	s := &Store{db: db, dir: dir, log: log, freeSpace: opts.FreeSpace, unreadable: map[string]bool{}, salvage: sv}
	s.upgrade = s.importOriginal(now)
	return s, nil
}

// MinFree is the free space the history keeps for closing Badger. Closing
// writes the memtable out as a new table file through a memory map, and a
// write through a map on a full disk is SIGBUS, which no Go code can catch:
// below this, Close leaves the memtable in its write-ahead log, which the
// next Open replays, and the process may exit safely; and Put, PutNew and
// Delete refuse (ErrFull), so that they do not eat that room.
const MinFree = 64 << 20

// ErrFull is a write's answer, wrapped with the free space left, when the
// disk holding the history has less than MinFree free. Nothing is written.
var ErrFull = errors.New("storage full: the disk holding the history has too little free space to write it safely; free some and try again")

// lowOnSpace reports the free space left when it is below MinFree; where
// the free space cannot be told, it is not low.
func (s *Store) lowOnSpace() (free uint64, low bool) {
	free, err := s.freeSpace(s.dir)
	return free, err == nil && free < MinFree
}

// checkSpace is ErrFull, wrapped, when the disk is low.
func (s *Store) checkSpace() error {
	if free, low := s.lowOnSpace(); low {
		return fmt.Errorf("%w (%d MiB free, %d MiB kept)", ErrFull, free>>20, MinFree>>20)
	}
	return nil
}

// ErrNotClosed is Close's answer when it left the database open for want
// of disk space; nothing committed is lost.
var ErrNotClosed = errors.New("history left open: too little disk space to close it safely; the next start replays its log")

// Close closes the database, unless the disk is nearly full (ErrNotClosed).
func (s *Store) Close() error {
	if free, low := s.lowOnSpace(); low {
		return fmt.Errorf("%w (%d MiB free)", ErrNotClosed, free>>20)
	}
	return s.db.Close()
}

func entryKey(e bench.HistoryEntry) []byte {
	return fmt.Appendf(nil, "%s%016x/%s", entryPrefix, uint64(e.StartedAt), e.ID)
}

// ErrExists is PutNew's answer when history holds the run already,
// readable or not.
var ErrExists = errors.New("the run is in history already")

// Put stores e, replacing an entry with the same id; ErrFull when the
// disk is low.
func (s *Store) Put(e bench.HistoryEntry) error { return s.put(e, true) }

// PutNew stores e unless history holds its run already (ErrExists): an
// import never overwrites a run, and the check and the write are one
// transaction. ErrFull when the disk is low.
func (s *Store) PutNew(e bench.HistoryEntry) error { return s.put(e, false) }

func (s *Store) put(e bench.HistoryEntry, replace bool) error {
	if !IDPattern.MatchString(e.ID) {
		return fmt.Errorf("history: bad run id %q", e.ID)
	}
	if e.Problems == nil {
		e.Problems = []string{}
	}
	if e.Cells == nil {
		e.Cells = []bench.CompactCell{}
	}
	val, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := s.checkSpace(); err != nil {
		return err
	}
	key := entryKey(e)
	return s.db.Update(func(txn *badger.Txn) error {
		idx := []byte(indexPrefix + e.ID)
		if item, err := txn.Get(idx); err == nil {
			if !replace {
				return ErrExists
			}
			old, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			if string(old) != string(key) {
				if err := txn.Delete(old); err != nil {
					return err
				}
			}
		} else if !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
		if err := txn.Set(key, val); err != nil {
			return err
		}
		if err := txn.Delete([]byte(forgottenPrefix + e.ID)); err != nil {
			return err
		}
		return txn.Set(idx, key)
	})
}

// ErrUnreadable is Get's answer for an entry that is in history but whose
// stored value does not decode (a bad write, a flipped byte on disk): it can
// only be removed, with Delete.
var ErrUnreadable = errors.New("the run's history entry is unreadable")

// Get returns one entry; ErrNotFound when id is unknown or malformed,
// ErrUnreadable when its value does not decode.
func (s *Store) Get(id string) (e bench.HistoryEntry, err error) {
	defer recoverDamage(&err)
	if !IDPattern.MatchString(id) {
		return e, ErrNotFound
	}
	err = s.db.View(func(txn *badger.Txn) error {
		key, err := s.entryKeyOf(txn, id)
		if err != nil {
			return err
		}
		item, err := txn.Get(key)
		if err != nil {
			return err
		}
		if err := decodeItem(item, &e); err != nil {
			s.noteUnreadable(id, true)
			return fmt.Errorf("%w: %v", ErrUnreadable, err)
		}
		return nil
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return e, ErrNotFound
	}
	return e, err
}

// entryKeyOf finds id's e/ key: from its index entry, or, when that is
// missing or unreadable, from a scan of the keys alone (no values read), so
// that an entry with a damaged index can still be found and deleted.
func (s *Store) entryKeyOf(txn *badger.Txn, id string) ([]byte, error) {
	if item, err := txn.Get([]byte(indexPrefix + id)); err == nil {
		if key, err := item.ValueCopy(nil); err == nil && bytes.HasPrefix(key, []byte(entryPrefix)) && bytes.HasSuffix(key, []byte("/"+id)) {
			return key, nil
		}
	} else if !errors.Is(err, badger.ErrKeyNotFound) {
		return nil, err
	}
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	opts.Prefix = []byte(entryPrefix)
	it := txn.NewIterator(opts)
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		if idOfKey(it.Item().Key()) == id {
			return it.Item().KeyCopy(nil), nil
		}
	}
	return nil, badger.ErrKeyNotFound
}

// idOfKey is the id part of an e/<startedAt>/<id> key.
func idOfKey(key []byte) string {
	i := bytes.LastIndexByte(key, '/')
	return string(key[i+1:])
}

func decodeItem(item *badger.Item, e *bench.HistoryEntry) error {
	return item.Value(func(v []byte) error { return decodeEntry(item.Key(), v, e) })
}

// onHost says whether item's entry is host's, reading only its machine's
// host (another host's entry of many cells is not decoded whole); an entry
// that cannot be read so is left for the full decode to report.
func onHost(item *badger.Item, host string) bool {
	var m struct {
		Machine struct {
			Host string `json:"host"`
		} `json:"machine"`
	}
	err := item.Value(func(v []byte) error { return json.Unmarshal(v, &m) })
	return err != nil || m.Machine.Host == host
}

// decodeEntry decodes the value stored under key: an entry of the run the
// key names, or an error saying why not.
func decodeEntry(key, v []byte, e *bench.HistoryEntry) error {
	if err := json.Unmarshal(v, e); err != nil {
		return err
	}
	if id := idOfKey(key); e.ID != id {
		return fmt.Errorf("the entry names run %.64q, not %.64q", e.ID, id)
	}
	return nil
}

// Delete removes one entry (readable or not) and its index; ErrNotFound
// when there is none, ErrFull when the disk is low (a deletion is a
// write too, until Badger compacts).
func (s *Store) Delete(id string) error {
	if !IDPattern.MatchString(id) {
		return ErrNotFound
	}
	if err := s.checkSpace(); err != nil {
		return err
	}
	err := s.db.Update(func(txn *badger.Txn) error {
		key, err := s.entryKeyOf(txn, id)
		if err != nil {
			return err
		}
		if err := txn.Delete(key); err != nil {
			return err
		}
		// Its run directory stays: the mark tells a start that the run
		// is gone on purpose, not lost (runsOnDisk).
		if err := txn.Set([]byte(forgottenPrefix+id), nil); err != nil {
			return err
		}
		return txn.Delete([]byte(indexPrefix + id))
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return ErrNotFound
	}
	if err == nil {
		s.noteUnreadable(id, false)
	}
	return err
}

// List returns up to limit readable entries, newest first (limit <= 0:
// all), and the unreadable ones it skipped.
func (s *Store) List(limit int) ([]bench.HistoryEntry, []bench.HistoryProblem, error) {
	out := []bench.HistoryEntry{}
	problems, err := s.Each(limit, "", func(e bench.HistoryEntry) error {
		out = append(out, e)
		return nil
	})
	return out, problems, err
}

// Each calls f on up to limit readable entries of host's runs (every
// run's when host is ""), newest first (limit <= 0: all), stopping at f's
// first error. An entry whose value does not decode is skipped and
// reported among the problems (at most bench.MaxListProblems of them,
// their messages without server paths), so one bad entry never hides the
// others.
func (s *Store) Each(limit int, host string, f func(bench.HistoryEntry) error) (problems []bench.HistoryProblem, err error) {
	defer recoverDamage(&err)
	problems = []bench.HistoryProblem{}
	err = s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Reverse = true
		opts.Prefix = []byte(entryPrefix)
		if limit > 0 && limit < opts.PrefetchSize && host == "" {
			opts.PrefetchSize = limit
		}
		it := txn.NewIterator(opts)
		defer it.Close()
		n := 0
		// Reverse iteration seeks to the last key not after the seek key;
		// 0xff sorts after every entry key.
		for it.Seek([]byte(entryPrefix + "\xff")); it.ValidForPrefix(opts.Prefix); it.Next() {
			if limit > 0 && n == limit {
				return nil
			}
			if host != "" && !onHost(it.Item(), host) {
				continue
			}
			var e bench.HistoryEntry
			if err := decodeItem(it.Item(), &e); err != nil {
				id := idOfKey(it.Item().Key())
				s.noteUnreadable(id, true)
				if len(problems) < bench.MaxListProblems {
					problems = append(problems, bench.HistoryProblem{ID: id, Message: "unreadable entry: " + redact.Message(err)})
				}
				continue
			}
			if host != "" && e.Machine.Host != host {
				continue
			}
			if err := f(e); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return problems, err
}

// Unreadable is how many distinct unreadable entries reads have met since
// the store opened (and not deleted since), for /healthz.
func (s *Store) Unreadable() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.unreadable)
}

func (s *Store) noteUnreadable(id string, bad bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if bad {
		// Cloned: a caller's id may live in memory it reuses (Fiber's).
		s.unreadable[strings.Clone(id)] = true
	} else {
		delete(s.unreadable, id)
	}
}

// quietLogger passes Badger's warnings and errors to the history's logger
// and drops its chatter.
type quietLogger struct{ log *slog.Logger }

func (l quietLogger) Errorf(f string, a ...any) {
	l.log.Error(strings.TrimSpace(fmt.Sprintf("history: badger: "+f, a...)))
}
func (l quietLogger) Warningf(f string, a ...any) {
	l.log.Warn(strings.TrimSpace(fmt.Sprintf("history: badger: "+f, a...)))
}
func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Debugf(string, ...any) {}
