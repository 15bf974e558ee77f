package history

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/mlx-bun/mlx-metrics/backend/internal/redact"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// Salvage is what Open did about a damaged history: files that fail their
// checks before Badger opens them (a flipped byte, a table cut short or
// missing, a MANIFEST cut or zeroed: Badger would panic, or drop tables
// without a word), or a history that opens lacking finished runs whose
// run.json is on disk (a lost write-ahead or value log). Open copies every
// entry it can still read (each table scanned both ways, which gets around
// a damaged block) into a fresh database with the index rebuilt, puts back
// the runs it lacks from their run directories, and keeps the damaged one
// beside it for a person to look at.
type Salvage struct {
	At int64 `json:"at"` // Unix ms
	// Cause is the checksum failure, without paths.
	Cause string `json:"cause"`
	// Kept is how many entries the fresh history holds.
	Kept int `json:"kept"`
	// DamagedCopy names the damaged database's directory, next to the
	// history's ("" when the salvage failed and the damaged one is in use).
	DamagedCopy string `json:"damagedCopy,omitempty"`
	// Failed is why the salvage did not happen: the damaged history is then
	// served as it reads.
	Failed string `json:"failed,omitempty"`
}

// salvage replaces the damaged database db at dir with a fresh copy of what
// it still reads and returns the fresh one open; on failure it returns db,
// still open, with Failed set.
func salvage(db *badger.DB, dir string, opts badger.Options, cause error, now time.Time, missing []bench.HistoryEntry) (*badger.DB, Salvage) {
	sv := Salvage{At: now.UnixMilli(), Cause: redact.Message(cause)}
	fresh := dir + ".salvage"
	fail := func(err error) (*badger.DB, Salvage) {
		sv.Failed, sv.Kept = redact.Message(err), 0
		os.RemoveAll(fresh)
		return db, sv
	}
	os.RemoveAll(fresh)
	out, err := badger.Open(opts.WithDir(fresh).WithValueDir(fresh))
	if err != nil {
		return fail(err)
	}
	n, err := copyEntries(db, out)
	if err == nil {
		err = writeEntries(out, missing)
		n += len(missing)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(err)
	}
	damaged := dir + ".damaged-" + strconv.FormatInt(now.Unix(), 10)
	db.Close()
	if err := os.Rename(dir, damaged); err != nil {
		reopened, oerr := badger.Open(opts)
		if oerr != nil {
			// Neither: the caller reports Open's failure.
			return nil, sv
		}
		db = reopened
		return fail(err)
	}
	if err := os.Rename(fresh, dir); err != nil {
		os.Rename(damaged, dir)
		reopened, _ := badger.Open(opts)
		db = reopened
		return fail(err)
	}
	salvaged, err := badger.Open(opts)
	if err != nil {
		return nil, sv
	}
	sv.Kept, sv.DamagedCopy = n, filepath.Base(damaged)
	return salvaged, sv
}

// copyEntries copies every e/ entry src still reads into dst, with its i/
// index entry rebuilt, and returns how many it copied. It scans forwards and
// backwards: each stops at a damaged block, from its own side.
func copyEntries(src, dst *badger.DB) (int, error) {
	wb := dst.NewWriteBatch()
	defer wb.Cancel()
	seen := map[string]bool{}
	if err := copyForgotten(src, wb); err != nil {
		return 0, err
	}
	for _, reverse := range []bool{false, true} {
		err := src.View(func(txn *badger.Txn) (err error) {
			// A panic reading a damaged block ends this direction only.
			defer func() {
				if r := recover(); r != nil {
					err = nil
				}
			}()
			opts := badger.DefaultIteratorOptions
			opts.Reverse = reverse
			opts.Prefix = []byte(entryPrefix)
			it := txn.NewIterator(opts)
			defer it.Close()
			seek := []byte(entryPrefix)
			if reverse {
				seek = []byte(entryPrefix + "\xff")
			}
			for it.Seek(seek); it.ValidForPrefix(opts.Prefix); it.Next() {
				key := it.Item().KeyCopy(nil)
				if seen[string(key)] || bytes.IndexByte(key[len(entryPrefix):], '/') < 0 {
					continue
				}
				val, err := it.Item().ValueCopy(nil)
				if err != nil {
					continue // unreadable: lost with its block
				}
				seen[string(key)] = true
				if err := wb.Set(key, val); err != nil {
					return err
				}
				if err := wb.Set([]byte(indexPrefix+idOfKey(key)), key); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	if err := wb.Flush(); err != nil {
		return 0, fmt.Errorf("write the salvaged history: %w", err)
	}
	return len(seen), nil
}

// copyForgotten copies the marks of forgotten runs (as far as they read),
// so that a salvage does not bring them back.
func copyForgotten(src *badger.DB, wb *badger.WriteBatch) error {
	return src.View(func(txn *badger.Txn) (err error) {
		defer func() {
			if recover() != nil {
				err = nil // a damaged block: the marks past it are lost
			}
		}()
		opts := badger.DefaultIteratorOptions
		opts.Prefix = []byte(forgottenPrefix)
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := wb.Set(it.Item().KeyCopy(nil), nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeEntries puts entries, each with its index, into db.
func writeEntries(db *badger.DB, entries []bench.HistoryEntry) error {
	if len(entries) == 0 {
		return nil
	}
	wb := db.NewWriteBatch()
	defer wb.Cancel()
	if err := putEntries(wb, entries); err != nil {
		return err
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("write the salvaged history: %w", err)
	}
	return nil
}

// rebuild replaces the history at dir, whose files Badger cannot be
// trusted to open (checkFiles), by a fresh one holding what its tables
// still read and the finished runs of runsDir that they lack. The damaged
// directory is kept beside it. An error means no history could be made:
// the start goes on degraded.
func rebuild(dir string, opts badger.Options, cause error, runsDir string, now time.Time) (Salvage, error) {
	sv := Salvage{At: now.UnixMilli(), Cause: redact.Message(cause)}
	damaged := dir + ".damaged-" + strconv.FormatInt(now.Unix(), 10)
	if err := os.Rename(dir, damaged); err != nil {
		sv.Failed = redact.Message(err)
		return sv, fmt.Errorf("%w; moving it aside: %v", cause, err)
	}
	sv.DamagedCopy = filepath.Base(damaged)
	fail := func(err error) (Salvage, error) {
		sv.Failed = redact.Message(err)
		return sv, fmt.Errorf("%w; rebuilding it: %v", cause, err)
	}
	db, err := badger.Open(opts)
	if err != nil {
		return fail(err)
	}
	wb := db.NewWriteBatch()
	for key, val := range readTables(damaged, opts) {
		if key[0] == forgottenPrefix[0] {
			err = wb.Set([]byte(key), nil)
		} else if bytes.IndexByte([]byte(key[len(entryPrefix):]), '/') >= 0 {
			if err = wb.Set([]byte(key), val); err == nil {
				sv.Kept++
				err = wb.Set([]byte(indexPrefix+idOfKey([]byte(key))), []byte(key))
			}
		}
		if err != nil {
			wb.Cancel()
			db.Close()
			return fail(err)
		}
	}
	if err = wb.Flush(); err == nil {
		var missing []bench.HistoryEntry
		if missing, err = runsOnDisk(db, runsDir); err == nil {
			err = writeEntries(db, missing)
			sv.Kept += len(missing)
		}
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(err)
	}
	return sv, nil
}
