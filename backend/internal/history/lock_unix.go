//go:build unix

package history

import (
	"os"
	"syscall"
)

// lockDir takes the lock Badger takes on dir (flock of the directory),
// so that files are not checked while another process writes them;
// false when another holds it (its Open says so) or dir cannot be opened.
func lockDir(dir string) (unlock func(), ok bool) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, false
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		f.Close()
		return nil, false
	}
	return func() { f.Close() }, true
}
