package history

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// childEnv makes the test binary a writer that puts entries into a history
// and exits without a clean close, as a crash or a full disk leaves it.
const childEnv = "MLX_METRICS_HISTORY_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		os.Exit(child(dir))
	}
	os.Exit(m.Run())
}

// child writes entries 0..n-1, then calls Close on a disk that looks full,
// and exits: the process ends with the database open.
func child(dir string) int {
	n, _ := strconv.Atoi(os.Getenv(childEnv + "_N"))
	var free uint64 = MinFree // room to write, until the disk fills
	s, err := Open(dir, Options{FreeSpace: func(string) (uint64, error) { return free, nil }})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i := range n {
		if err := s.Put(entry(i)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	free = MinFree - 1
	if err := s.Close(); !errors.Is(err, ErrNotClosed) {
		fmt.Fprintln(os.Stderr, "Close on a full disk:", err)
		return 1
	}
	return 0
}

// TestNextStartRecovers: after a process that wrote history ended without
// closing it (Close declined on a full disk, or a crash), the next Open
// replays the log; with its log's tail torn, it still opens and answers.
func TestNextStartRecovers(t *testing.T) {
	const n = 40
	tests := []struct {
		name    string
		tear    func(t *testing.T, dir string) // damage after the child
		atLeast int                            // entries that must survive
	}{
		{"exit without close", func(*testing.T, string) {}, n},
		{"torn log tail", func(t *testing.T, dir string) {
			logs, _ := filepath.Glob(filepath.Join(dir, "*.mem"))
			if len(logs) == 0 {
				t.Fatal("no write-ahead log")
			}
			// The entries are in the first few KB: cut the file inside them.
			if err := os.Truncate(logs[0], 4<<10); err != nil {
				t.Fatal(err)
			}
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+dir, childEnv+"_N="+strconv.Itoa(n))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("writer: %v: %s", err, out)
			}
			tt.tear(t, dir)
			s, err := Open(dir, Options{})
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			defer s.Close()
			got, _, err := s.List(0)
			if err != nil || len(got) < tt.atLeast {
				t.Fatalf("after reopen: %d entries, %v; want at least %d", len(got), err, tt.atLeast)
			}
			if err := s.Put(entry(n)); err != nil {
				t.Fatalf("Put after reopen: %v", err)
			}
		})
	}
}

// TestCloseWithRoom: with room on the disk Close closes.
func TestCloseWithRoom(t *testing.T) {
	s, err := Open(t.TempDir(), Options{FreeSpace: func(string) (uint64, error) { return MinFree, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
