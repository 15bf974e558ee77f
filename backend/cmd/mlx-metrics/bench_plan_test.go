package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// `bench plan --base-url URL` without a command attaches to the server
// running there; flags that only mean something for a started server are
// usage errors then.
func TestBenchPlanAttach(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		attach bool
		ready  string
	}{
		{"attach", []string{"--base-url", "http://127.0.0.1:8080/v1"}, 0, true, ""},
		{"attach with a ready url", []string{"--base-url", "http://127.0.0.1:8080/v1", "--ready-url", "http://127.0.0.1:8080/ping"}, 0, true, "http://127.0.0.1:8080/ping"},
		{"a command: started, not attached", []string{"--base-url", "http://127.0.0.1:{port}/v1", "--", "llama-server", "--port", "{port}"}, 0, false, "http://127.0.0.1:{port}/v1/models"},
		{"no base url: the reference engine", nil, 0, false, "http://127.0.0.1:{port}/health"},
		{"attach to {port}", []string{"--base-url", "http://127.0.0.1:{port}/v1"}, 2, false, ""},
		{"attach with --port", []string{"--base-url", "http://127.0.0.1:8080/v1", "--port", "9000"}, 2, false, ""},
		{"attach with --env", []string{"--base-url", "http://127.0.0.1:8080/v1", "--env", "A=1"}, 2, false, ""},
		{"attach to a bad url", []string{"--base-url", "127.0.0.1:8080/v1"}, 2, false, ""},
	}
	quiet(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "p.json")
			args := append([]string{"bench", "plan", "--out", out}, tt.args...)
			if got := run(context.Background(), args); got != tt.code {
				t.Fatalf("exit %d, want %d", got, tt.code)
			}
			if tt.code != 0 {
				if _, err := os.Stat(out); err == nil {
					t.Error("a refused plan was written")
				}
				return
			}
			p, err := readPlan(out)
			if err != nil {
				t.Fatal(err)
			}
			s := p.Cells[0].Server
			if s.Attach != tt.attach || s.ReadyURL != tt.ready || (tt.attach && len(s.Argv) != 0) || (!tt.attach && len(s.Argv) == 0) {
				t.Errorf("server %+v, want attach %v, readyUrl %q", s, tt.attach, tt.ready)
			}
		})
	}
}
