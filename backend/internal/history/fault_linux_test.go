package history

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A read of a mapped file past its end faults with SIGBUS, as Badger's
// reads did on a full disk: guardFault returns it as ErrFault.
func TestGuardFault(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mapped")
	page := os.Getpagesize()
	if err := os.WriteFile(path, make([]byte, 2*page), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, 2*page, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	var sink byte
	err = guardFault(func() error {
		sink = m[page] // past the end of the file now
		return nil
	})
	if !errors.Is(err, ErrFault) {
		t.Fatalf("err = %v (read %d), want ErrFault", err, sink)
	}
	// Any other panic is not a fault, and is not hidden.
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v, want the panic itself", r)
		}
	}()
	_ = guardFault(func() error { panic("boom") })
}
