package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// The test binary runs the real main when asked to, so -h is checked as a
// user sees it: exit code, stdout and stderr.
func init() {
	if os.Getenv("MLX_METRICS_TEST_MAIN") == "1" {
		os.Exit(run(context.Background(), strings.Fields(os.Getenv("MLX_METRICS_TEST_ARGS"))))
	}
}

// bareValueName is a flag line naming its value by Go type ("-addr
// string"), not by what it is ("-addr HOST:PORT").
var bareValueName = regexp.MustCompile(`(?m)^\s+-[\w-]+ (string|int|int64|uint|float|float64|duration|value)$`)

// Every command's -h has a synopsis, a description, examples and flag
// values named for what they are, and exits 0.
func TestEveryCommandHasHelp(t *testing.T) {
	// The command table itself, bench's and events' subcommand lists too.
	cmds := [][]string{{}, {"bench"}, {"events", "replay"}}
	for _, c := range commands {
		if c.name == "bench" {
			for _, b := range benchCommands {
				cmds = append(cmds, []string{"bench", b.name})
			}
			continue
		}
		cmds = append(cmds, []string{c.name})
	}
	if testing.Short() {
		t.Skip("runs the binary once per command")
	}
	for _, cmd := range cmds {
		name := strings.Join(cmd, " ")
		t.Run(name, func(t *testing.T) {
			c := exec.Command(os.Args[0])
			c.Env = append(os.Environ(), "MLX_METRICS_TEST_MAIN=1", "MLX_METRICS_TEST_ARGS="+strings.TrimSpace(name+" -h"))
			out, err := c.CombinedOutput()
			if err != nil {
				t.Fatalf("mlx-metrics %s -h: %v\n%s", name, err, out)
			}
			text := string(out)
			lines := strings.Split(text, "\n")
			switch {
			case !strings.HasPrefix(text, strings.TrimSpace("usage: mlx-metrics "+name)):
				t.Errorf("no synopsis first:\n%s", text)
			case len(lines) < 3 || strings.TrimSpace(lines[1]) != "" || strings.TrimSpace(lines[2]) == "":
				t.Errorf("no description after the synopsis:\n%s", text)
			case !strings.Contains(strings.ToLower(text), "example"):
				t.Errorf("no examples:\n%s", text)
			}
			if m := bareValueName.FindAllString(text, -1); len(m) > 0 {
				t.Errorf("flag values named by their Go type: %q", m)
			}
		})
	}
}
