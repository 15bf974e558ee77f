package history

import (
	"encoding/json"
	"os"
	"path/filepath"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// forgottenPrefix marks a run removed on purpose (Delete): its run
// directory stays, and its absence from history is no damage.
const forgottenPrefix = "f/"

// runsOnDisk is the entries of the finished runs under runsDir (each
// <id>/run.json) that db holds neither as an entry nor as forgotten: runs
// the history should have and has not. Only those run.json files are read.
func runsOnDisk(db *badger.DB, runsDir string) ([]bench.HistoryEntry, error) {
	if runsDir == "" {
		return nil, nil
	}
	dirs, err := os.ReadDir(runsDir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	known := map[string]bool{}
	err = db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		it := txn.NewIterator(opts)
		defer it.Close()
		// The entries themselves, not the index: an index left pointing
		// at a lost entry is no run.
		for it.Seek([]byte(entryPrefix)); it.ValidForPrefix([]byte(entryPrefix)); it.Next() {
			known[idOfKey(it.Item().Key())] = true
		}
		for it.Seek([]byte(forgottenPrefix)); it.ValidForPrefix([]byte(forgottenPrefix)); it.Next() {
			known[string(it.Item().Key()[len(forgottenPrefix):])] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var missing []bench.HistoryEntry
	for _, d := range dirs {
		id := d.Name()
		if !d.IsDir() || known[id] || !IDPattern.MatchString(id) {
			continue
		}
		if e, ok := readRun(filepath.Join(runsDir, id), id); ok {
			missing = append(missing, e)
		}
	}
	return missing, nil
}

// readRun is the history entry of the finished run in dir, as the job
// service keeps it; false when dir holds none (a run still going, a
// runner that died before its record, a run.json that does not read).
func readRun(dir, id string) (bench.HistoryEntry, bool) {
	data, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		return bench.HistoryEntry{}, false
	}
	var rec bench.RunRecord
	if json.Unmarshal(data, &rec) != nil || rec.FinishedAt <= 0 || (rec.ID != "" && rec.ID != id) {
		return bench.HistoryEntry{}, false
	}
	rec.ID = id
	return bench.Compact(rec, dir), true
}

// putEntries writes entries, with their index, into db through wb.
func putEntries(wb *badger.WriteBatch, entries []bench.HistoryEntry) error {
	for _, e := range entries {
		val, err := json.Marshal(e)
		if err != nil {
			return err
		}
		key := entryKey(e)
		if err := wb.Set(key, val); err != nil {
			return err
		}
		if err := wb.Set([]byte(indexPrefix+e.ID), key); err != nil {
			return err
		}
	}
	return nil
}
