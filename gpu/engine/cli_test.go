package engine

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
)

// A port another process holds is said as such, with the way out, not as
// a raw bind error.
func TestCommandPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	err = Command(context.Background(), []string{"--host", "127.0.0.1", "--port", port}, io.Discard)
	want := "port " + port + " is taken: another process listens on 127.0.0.1; pass another --port (0 picks a free one)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

// Command's -h is a synopsis, a description, examples and named flag
// values, and never prints the events token it may read from the
// environment; bad flags are usage errors that print nothing (the caller
// says them in one line).
func TestCommandUsage(t *testing.T) {
	t.Setenv("MLX_METRICS_EVENTS_TOKEN", "s3cret-token")
	tests := []struct {
		args    []string
		usage   bool // a UsageError
		outHas  []string
		outLack []string
	}{
		{[]string{"-h"}, false,
			[]string{"usage: mlx-metrics engine", "Examples:", "mlx-metrics engine --port 8000", "-port PORT", "-decode-rate RATE", "-publish-token TOKEN"},
			[]string{"s3cret-token"}},
		{[]string{"--decode-rate", "0"}, true, nil, nil},
		{[]string{"--bogus"}, true, nil, []string{"s3cret-token", "usage:", "-port"}},
		{[]string{"extra"}, true, nil, nil},
		{[]string{"--port", "70000"}, true, nil, nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			err := Command(context.Background(), tt.args, &out)
			var ue *UsageError
			if got := errors.As(err, &ue); got != tt.usage {
				t.Fatalf("err = %v, want a usage error: %v", err, tt.usage)
			}
			for _, s := range tt.outHas {
				if !strings.Contains(out.String(), s) {
					t.Errorf("output lacks %q:\n%s", s, out.String())
				}
			}
			for _, s := range tt.outLack {
				if strings.Contains(out.String(), s) {
					t.Errorf("output holds %q", s)
				}
			}
		})
	}
}
