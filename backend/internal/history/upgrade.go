package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/redact"
	"github.com/mlx-bun/mlx-metrics/shared/atomicfile"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// The original TypeScript module kept its history as one JSON file per run
// in the very folder Badger opens (<home>/metrics/history/<id>.json). Open
// moves those files aside, into history.original-<unix s>/ beside it, before
// Badger opens, and imports each into this history; a note written in that
// folder when it is done (importedNote) makes a later start leave it alone,
// so that a run forgotten since is not brought back. A start cut short
// between the move and the note imports the folder again: runs already in
// history are counted, not written twice.

const (
	originalPrefix = ".original-"
	importedNote   = "imported.json"
	// maxOriginalBytes bounds one of the original's files, as POST /history
	// bounds a body: its entries are a few KiB.
	maxOriginalBytes = 8 << 20
)

// Upgrade is what Open did with the original module's history files.
type Upgrade struct {
	At int64 `json:"at"` // Unix ms
	// Folder is where the original's files now are, beside the history.
	Folder   string `json:"folder"`
	Files    int    `json:"files"`
	Imported int    `json:"imported"`
	// Already counts runs history held before (an import cut short).
	Already int           `json:"already"`
	Skipped []UpgradeSkip `json:"skipped"`
	// Failed is why the import stopped short (the files stay in Folder and
	// the next start tries again).
	Failed string `json:"failed,omitempty"`
}

// UpgradeSkip is one of the original's files not imported, and why.
type UpgradeSkip struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// isOriginalFile is a file the original wrote in its history folder: an
// entry, or one its writer left half-written (<id>.json.<pid>.tmp).
// Badger's own files never end so.
func isOriginalFile(name string) bool {
	return strings.HasSuffix(name, ".json") || (strings.Contains(name, ".json.") && strings.HasSuffix(name, ".tmp"))
}

// moveOriginal moves the original's files out of dir into a new folder
// beside it, and returns the folder's name ("" when there were none).
func moveOriginal(dir string, now time.Time) (string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	} else if err != nil {
		return "", redact.Err(err)
	}
	var names []string
	for _, e := range ents {
		if e.Type().IsRegular() && isOriginalFile(e.Name()) {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return "", nil
	}
	aside := dir + originalPrefix + strconv.FormatInt(now.Unix(), 10)
	for i := 2; ; i++ {
		if err = os.Mkdir(aside, 0o755); !errors.Is(err, fs.ErrExist) {
			break
		}
		aside = fmt.Sprintf("%s%s%d-%d", dir, originalPrefix, now.Unix(), i)
	}
	if err != nil {
		return "", redact.Err(err)
	}
	for _, n := range names {
		if err := os.Rename(filepath.Join(dir, n), filepath.Join(aside, n)); err != nil {
			// Those moved are imported; the rest are moved at the next start.
			return filepath.Base(aside), redact.Err(err)
		}
	}
	return filepath.Base(aside), nil
}

// importOriginal imports every folder of the original's files beside dir
// that has no note yet. nil when there was none.
func (s *Store) importOriginal(now time.Time) []Upgrade {
	folders, _ := filepath.Glob(s.dir + originalPrefix + "*")
	sort.Strings(folders)
	var ups []Upgrade
	for _, f := range folders {
		if fi, err := os.Stat(f); err != nil || !fi.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(f, importedNote)); err == nil {
			continue
		}
		up := s.importFolder(f, now)
		if up.Failed == "" {
			data, _ := json.MarshalIndent(up, "", "  ")
			if err := atomicfile.WriteFile(filepath.Join(f, importedNote), append(data, '\n'), 0o644); err != nil {
				up.Failed = "writing its note: " + redact.Message(err)
			}
		}
		if up.Failed != "" {
			s.log.Warn("history: " + up.Summary())
		} else {
			s.log.Info("history: " + up.Summary())
		}
		ups = append(ups, up)
	}
	return ups
}

// importFolder imports the original's entries in folder f: one bad file
// never stops the others.
func (s *Store) importFolder(f string, now time.Time) Upgrade {
	up := Upgrade{At: now.UnixMilli(), Folder: filepath.Base(f), Skipped: []UpgradeSkip{}}
	ents, err := os.ReadDir(f)
	if err != nil {
		up.Failed = redact.Message(err)
		return up
	}
	for _, ent := range ents {
		name := ent.Name()
		if name == importedNote || !isOriginalFile(name) {
			continue
		}
		up.Files++
		skip := func(reason string) { up.Skipped = append(up.Skipped, UpgradeSkip{File: name, Reason: reason}) }
		if !strings.HasSuffix(name, ".json") {
			skip("left half-written by the original (it never finished writing it)")
			continue
		}
		e, err := readOriginal(filepath.Join(f, name), now)
		if err != nil {
			skip(redact.Message(err))
			continue
		}
		switch err := s.PutNew(e); {
		case err == nil:
			up.Imported++
		case errors.Is(err, ErrExists):
			up.Already++
		case errors.Is(err, ErrFull):
			up.Failed = redact.Message(err)
			return up
		default:
			skip(redact.Message(err))
		}
	}
	return up
}

func readOriginal(path string, now time.Time) (bench.HistoryEntry, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return bench.HistoryEntry{}, redact.Err(err)
	}
	if fi.Size() > maxOriginalBytes {
		return bench.HistoryEntry{}, fmt.Errorf("%d bytes: at most %d MiB", fi.Size(), maxOriginalBytes>>20)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return bench.HistoryEntry{}, redact.Err(err)
	}
	return bench.DecodeOriginalEntry(data, now)
}

// Summary says in a line what the upgrade did, for the log.
func (u Upgrade) Summary() string {
	s := fmt.Sprintf("imported %d of the original module's %d history files (in %s)", u.Imported, u.Files, u.Folder)
	if u.Already > 0 {
		s += fmt.Sprintf(", %d already in history", u.Already)
	}
	for _, k := range u.Skipped {
		s += fmt.Sprintf("; skipped %s: %s", k.File, k.Reason)
	}
	if u.Failed != "" {
		s += "; stopped: " + u.Failed + " (the next start tries again)"
	}
	return s
}
