package main

import (
	"net"
	"strings"
	"testing"
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
