package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/backend/internal/homelock"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// A taken port is one line naming the flag to change (exit 1); a bad
// address is a usage error (exit 2).
func TestListenError(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct {
		addr string
		code int
		want string
	}{
		{taken.Addr().String(), 1, "is already in use (another server there?); choose another with --addr HOST:PORT or MLX_METRICS_ADDR"},
		{"127.0.0.1:99999", 2, "--addr 127.0.0.1:99999: "},
	} {
		_, err := net.Listen("tcp", tc.addr)
		if err == nil {
			t.Fatalf("%s bound", tc.addr)
		}
		got := listenError(tc.addr, err)
		if exitCode(got) != tc.code || !strings.Contains(got.Error(), tc.want) || strings.Contains(got.Error(), "\n") {
			t.Errorf("listenError(%s) = %q (exit %d), want exit %d and %q", tc.addr, got, exitCode(got), tc.code, tc.want)
		}
	}
}

// A second serve on a home in use is one line naming the process that
// holds it (exit 1), not a storage failure; so are bench run --home and
// bench import --home, which would open its history.
func TestHomeInUse(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	home := t.TempDir()
	holder, err := homelock.Acquire(home, "serve")
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	holder.SetAddr("127.0.0.1:7878")
	c := exec.Command(os.Args[0])
	c.Env = append(os.Environ(), "MLX_METRICS_TEST_MAIN=1", "MLX_METRICS_TEST_ARGS=serve --addr 127.0.0.1:0 --home "+home)
	out, err := c.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("serve: %v, want exit 1\n%s", err, out)
	}
	want := fmt.Sprintf("mlx-metrics serve: home %s is in use by mlx-metrics serve (pid %d, http://127.0.0.1:7878, since ", home, os.Getpid())
	if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
		t.Fatalf("serve printed:\n%s\nwant one line starting %q", out, want)
	}
	var stdout bytes.Buffer
	entry := bench.HistoryEntry{ID: "20261206T120000Z-held", RunDirectory: "/runs/x"}
	if err := keepInHistory(home, entry, &stdout); err != nil || !strings.Contains(stdout.String(), fmt.Sprintf("is held by mlx-metrics serve (pid %d", os.Getpid())) {
		t.Fatalf("bench run --home: %v\n%s", err, stdout.String())
	}
}
