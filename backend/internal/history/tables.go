package history

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/badger/v4/y"
	"github.com/dgraph-io/ristretto/v2/z"
)

// Badger opens its tables in goroutines of its own, where a damaged file
// is a panic (slice bounds) that no caller can recover, and it deletes the
// tables its MANIFEST does not name, so a cut MANIFEST loses every run in
// silence. So the files are checked here first, in the caller's goroutine,
// before Badger touches them.

// Value meta bits of Badger's (unexported there).
const (
	bitDelete       = 1 << 0
	bitValuePointer = 1 << 1
)

// checkFiles reports the first damage found in the database at dir: a
// MANIFEST that does not read, a table it names that is missing, a table it
// does not name (Badger would delete it), a table that fails its checksums.
// A directory without a MANIFEST (a new history) is no damage. Only an
// error wrapping ErrDamaged is damage: another (a directory that cannot be
// read) is for Badger's Open to meet.
func checkFiles(dir string, opts badger.Options) error {
	unlock, ok := lockDir(dir)
	if !ok {
		return nil // in use, not there yet, or no lock here: Badger says
	}
	defer unlock()
	tables, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil {
		return err
	}
	f, err := os.Open(filepath.Join(dir, badger.ManifestFilename))
	if errors.Is(err, os.ErrNotExist) {
		if len(tables) > 0 {
			return fmt.Errorf("%w: the MANIFEST is missing, %d table files are not", ErrDamaged, len(tables))
		}
		return nil
	}
	if err != nil {
		return err
	}
	m, _, err := replayManifest(f, opts)
	f.Close()
	if err != nil {
		return fmt.Errorf("%w: the MANIFEST does not read: %v", ErrDamaged, err)
	}
	onDisk := map[uint64]bool{}
	for _, path := range tables {
		if id, ok := table.ParseFileID(path); ok {
			onDisk[id] = true
		}
	}
	for id := range m.Tables {
		if !onDisk[id] {
			return fmt.Errorf("%w: table %s is missing", ErrDamaged, table.IDToFilename(id))
		}
	}
	for id := range onDisk {
		if _, ok := m.Tables[id]; !ok {
			return fmt.Errorf("%w: table %s is not in the MANIFEST", ErrDamaged, table.IDToFilename(id))
		}
	}
	for _, path := range tables {
		if err := verifyTable(path, opts); err != nil {
			return fmt.Errorf("%w: table %s: %v", ErrDamaged, filepath.Base(path), err)
		}
	}
	return nil
}

// replayManifest reads a MANIFEST; a cut or scrambled one may panic.
func replayManifest(f *os.File, opts badger.Options) (m badger.Manifest, off int64, err error) {
	defer recoverDamage(&err)
	return badger.ReplayManifestFile(f, opts.ExternalMagicVersion, opts)
}

// openTable maps the table at path read-only, every block's checksum
// checked as it is read; close releases it without deleting the file
// (the table's own DecrRef deletes it).
func openTable(path string, opts badger.Options, mode options.ChecksumVerificationMode) (t *table.Table, close func(), err error) {
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	release := func() { mf.Close(-1) }
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // a file cut under its map
	defer func() {
		if r := recover(); r != nil {
			release()
			t, close, err = nil, nil, fmt.Errorf("unreadable: %v", r)
		}
	}()
	// The options that tell how a table is laid out, as Badger's own.
	t, err = table.OpenTable(mf, table.Options{ChkMode: mode, BlockSize: opts.BlockSize,
		Compression: opts.Compression, ZSTDCompressionLevel: opts.ZSTDCompressionLevel})
	if err != nil {
		release()
		return nil, nil, err
	}
	return t, release, nil
}

// verifyTable checks every checksum of the table at path: its index and
// each block.
func verifyTable(path string, opts badger.Options) error {
	_, release, err := openTable(path, opts, options.OnTableAndBlockRead)
	if err != nil {
		return err
	}
	release()
	return nil
}

// tableEntry is the newest version of a key found in the tables.
type tableEntry struct {
	version uint64
	deleted bool
	value   []byte
}

// readTables collects the newest version of every e/ and f/ key that the tables
// at dir still read, each table scanned both ways so that a damaged block
// loses only itself. Keys whose newest version is a deletion are dropped.
func readTables(dir string, opts badger.Options) map[string][]byte {
	found := map[string]tableEntry{}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	sort.Strings(paths)
	for _, path := range paths {
		t, release, err := openTable(path, opts, options.OnBlockRead)
		if err != nil {
			continue // its index is gone: nothing of it can be found
		}
		for _, reverse := range []int{0, table.REVERSED} {
			scanTable(t, reverse, found)
		}
		release()
	}
	out := map[string][]byte{}
	for k, e := range found {
		if !e.deleted {
			out[k] = e.value
		}
	}
	return out
}

// scanTable adds t's e/ entries to found, in one direction, until the end
// or a block that does not read.
func scanTable(t *table.Table, opt int, found map[string]tableEntry) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() { recover() }() // a damaged block ends this direction only
	it := t.NewIterator(opt | table.NOCACHE)
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		key := y.ParseKey(it.Key())
		if !bytes.HasPrefix(key, []byte(entryPrefix)) && !bytes.HasPrefix(key, []byte(forgottenPrefix)) {
			continue
		}
		v := it.ValueCopy()
		version := y.ParseTs(it.Key())
		if v.Meta&bitValuePointer != 0 {
			continue // in the value log: entries are small, never there
		}
		if old, ok := found[string(key)]; ok && old.version >= version {
			continue
		}
		found[string(key)] = tableEntry{version: version, deleted: v.Meta&bitDelete != 0, value: v.Value}
	}
}
