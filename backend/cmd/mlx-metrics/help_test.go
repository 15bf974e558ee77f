package main

import (
	"context"
	"errors"
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
	cmds := helpCommands()
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

// A command-line mistake is one line naming it and one pointing at -h,
// exit status 2: never the usage, which hid the mistake among its flags.
func TestMistakesAreOneLine(t *testing.T) {
	tests := []struct {
		args  string
		first string // the first line, whole
		help  string // the command the second line points at
	}{
		{"--bogus", "mlx-metrics serve: flag provided but not defined: -bogus", "serve"},
		{"serve --addr", "mlx-metrics serve: flag needs an argument: -addr", "serve"},
		{"serve --port 80", "mlx-metrics serve: flag provided but not defined: -port: serve listens on --addr HOST:PORT (default 127.0.0.1:7878)", "serve"},
		{"serve -host=0.0.0.0", "mlx-metrics serve: flag provided but not defined: -host: serve listens on --addr HOST:PORT (default 127.0.0.1:7878)", "serve"},
		{"serve extra", `mlx-metrics serve: unexpected argument "extra" (serve takes only flags)`, "serve"},
		{"bench run", "mlx-metrics bench run: --plan is required: the plan FILE to run (mlx-metrics bench plan writes one)", "bench run"},
		{"bench run a.json b.json", `mlx-metrics bench run: unexpected argument "b.json" (bench run takes one plan FILE, as --plan or alone)`, "bench run"},
		{"bench run --plan a.json b.json", `mlx-metrics bench run: unexpected argument "b.json" (bench run takes one plan FILE, as --plan or alone)`, "bench run"},
		{"bench plan --out=", `mlx-metrics bench plan: --out "": want a FILE, or - for stdout (the default)`, "bench plan"},
		{"bench list --bogus", "mlx-metrics bench list: flag provided but not defined: -bogus", "bench list"},
		{"bench", "mlx-metrics bench: missing subcommand (run, plan, list, show, compare, start, cancel, forget, import, export)", "bench"},
		{"bench nope", `mlx-metrics bench: unknown subcommand "nope"`, "bench"},
		{"engine --bogus", "mlx-metrics engine: flag provided but not defined: -bogus", "engine"},
		{"snapshot --bogus", "mlx-metrics snapshot: flag provided but not defined: -bogus", "snapshot"},
		{"events", "mlx-metrics events: missing subcommand (replay)", "events"},
		{"events replay", "", "events replay"},
		{"nope", `mlx-metrics: unknown command "nope"`, ""},
	}
	if testing.Short() {
		t.Skip("runs the binary once per case")
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			t.Parallel()
			c := exec.Command(os.Args[0])
			c.Env = append(os.Environ(), "MLX_METRICS_TEST_MAIN=1", "MLX_METRICS_TEST_ARGS="+tt.args)
			out, err := c.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("mlx-metrics %s: %v, want exit status 2\n%s", tt.args, err, out)
			}
			lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			second := "run 'mlx-metrics " + tt.help + " -h' for usage"
			if tt.help == "" {
				second = "run 'mlx-metrics -h' for the commands"
			}
			if len(lines) != 2 || (tt.first != "" && lines[0] != tt.first) || lines[1] != second {
				t.Fatalf("mlx-metrics %s printed:\n%s\nwant two lines:\n%s\n%s", tt.args, out, tt.first, second)
			}
		})
	}
}
