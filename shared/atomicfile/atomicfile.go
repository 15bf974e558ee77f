// Package atomicfile writes files whole or not at all: the data goes to a
// temporary file in the same directory, which is synced and then renamed
// (or linked) into place, the directory synced after, so a crash or a full disk mid-write never leaves
// half a file for the next reader to trip on. Both the backend and the gpu
// module use it for their small state files (job.json, plans, run.json).
package atomicfile

import (
	"os"
	"path/filepath"
)

// WriteFile replaces path with data. On failure path is as it was and no
// temporary file is left behind.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	syncDir(path)
	return nil
}

// WriteNew writes path with data unless it exists, in which case the error
// satisfies errors.Is(err, fs.ErrExist) and path is untouched.
func WriteNew(path string, data []byte, perm os.FileMode) error {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		return err
	}
	syncDir(path)
	return nil
}

// syncDir syncs path's directory, so the new name survives a power cut as
// well as the data does. Best effort: the file is in place either way, and
// some systems cannot sync a directory.
func syncDir(path string) {
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
}

// writeTemp writes data to a new hidden file next to path and syncs it.
func writeTemp(path string, data []byte, perm os.FileMode) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
