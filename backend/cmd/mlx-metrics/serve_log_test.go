package main

import (
	"context"
	"strings"
	"testing"
)

// A --log-format or --log-level serve does not know is a usage error
// (exit 2) naming the values it takes, said before anything starts.
func TestServeLogFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--log-format", "xml"}, "want text or json"},
		{[]string{"--log-level", "loud"}, "want debug, info, warn or error"},
	} {
		err := runServe(context.Background(), append(tc.args, "--addr", "127.0.0.1:0", "--home", t.TempDir()))
		if exitCode(err) != 2 || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("serve %q: %v (exit %d), want exit 2 and %q", tc.args, err, exitCode(err), tc.want)
		}
	}
}
