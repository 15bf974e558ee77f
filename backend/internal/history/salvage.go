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
)

// Salvage is what Open did about a history whose table files failed their
// checksums (a flipped byte on disk): Badger reads a damaged block as the end
// of its table, so entries would vanish from the listing without a word.
// Open copies every entry it can still read (scanning both ways, which gets
// around a damaged block) into a fresh database, rebuilds the index from
// them, and keeps the damaged one beside it for a person to look at.
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
func salvage(db *badger.DB, dir string, opts badger.Options, cause error, now time.Time) (*badger.DB, Salvage) {
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
