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
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"regexp"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// ErrNotFound is Get's answer for an unknown or malformed id.
var ErrNotFound = errors.New("no such run in history")

// IDPattern is what a run id may look like (bench.NewRunID's form and any
// other name a run directory may have).
var IDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

const (
	entryPrefix = "e/"
	indexPrefix = "i/"
)

// Store is the history database.
type Store struct {
	db *badger.DB
}

// Open opens (creating) the history at dir.
func Open(dir string) (*Store, error) {
	opts := badger.DefaultOptions(dir).
		WithLogger(quietLogger{}).
		// Entries are a few KB; small tables keep memory and start-up
		// modest on a laptop that also runs models.
		WithMemTableSize(8 << 20).
		WithValueLogFileSize(64 << 20).
		WithNumVersionsToKeep(1)
	db, err := badger.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("open history %s: %w", dir, err)
	}
	return &Store{db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

func entryKey(e bench.HistoryEntry) []byte {
	return fmt.Appendf(nil, "%s%016x/%s", entryPrefix, uint64(e.StartedAt), e.ID)
}

// Put stores e, replacing an entry with the same id.
func (s *Store) Put(e bench.HistoryEntry) error {
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
	key := entryKey(e)
	return s.db.Update(func(txn *badger.Txn) error {
		idx := []byte(indexPrefix + e.ID)
		if item, err := txn.Get(idx); err == nil {
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
		return txn.Set(idx, key)
	})
}

// Get returns one entry; ErrNotFound when id is unknown or malformed.
func (s *Store) Get(id string) (bench.HistoryEntry, error) {
	var e bench.HistoryEntry
	if !IDPattern.MatchString(id) {
		return e, ErrNotFound
	}
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(indexPrefix + id))
		if err != nil {
			return err
		}
		key, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		item, err = txn.Get(key)
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error { return json.Unmarshal(v, &e) })
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return e, ErrNotFound
	}
	return e, err
}

// List returns up to limit entries, newest first (limit <= 0: all).
func (s *Store) List(limit int) ([]bench.HistoryEntry, error) {
	out := []bench.HistoryEntry{}
	err := s.Each(limit, func(e bench.HistoryEntry) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// Each calls f on up to limit entries, newest first (limit <= 0: all),
// stopping at f's first error.
func (s *Store) Each(limit int, f func(bench.HistoryEntry) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Reverse = true
		opts.Prefix = []byte(entryPrefix)
		if limit > 0 && limit < opts.PrefetchSize {
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
			var e bench.HistoryEntry
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &e) }); err != nil {
				return fmt.Errorf("history entry %s: %w", it.Item().Key(), err)
			}
			if err := f(e); err != nil {
				return err
			}
			n++
		}
		return nil
	})
}

// quietLogger passes Badger's warnings and errors to the standard logger and
// drops its chatter.
type quietLogger struct{}

func (quietLogger) Errorf(f string, a ...any)   { log.Printf("history: badger: "+f, a...) }
func (quietLogger) Warningf(f string, a ...any) { log.Printf("history: badger: "+f, a...) }
func (quietLogger) Infof(string, ...any)        {}
func (quietLogger) Debugf(string, ...any)       {}
