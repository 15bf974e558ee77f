package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/mattn/go-isatty"

	"github.com/mlx-bun/mlx-metrics/backend/internal/apiclient"
	"github.com/mlx-bun/mlx-metrics/shared/cliflag"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/plural"
)

// cliEnv is where the client subcommands write, so tests can capture it.
type cliEnv struct {
	stdout, stderr io.Writer
	// tty is true when stderr is a terminal: progress is then a bar
	// redrawn in place, else plain lines.
	tty bool
	// clock paces replay and the progress bar (clock.Real when nil).
	clock clock.Clock
}

func osEnv() cliEnv {
	return cliEnv{stdout: os.Stdout, stderr: os.Stderr,
		tty: isatty.IsTerminal(os.Stderr.Fd()) || isatty.IsCygwinTerminal(os.Stderr.Fd())}
}

// clk is env's clock: the injected one, else the system's.
func (e cliEnv) clk() clock.Clock {
	if e.clock == nil {
		return clock.Real{}
	}
	return e.clock
}

// defaultServer is the backend the client subcommands talk to.
func defaultServer() string { return envOr("MLX_METRICS_SERVER", "http://127.0.0.1:7878") }

// clientFlags begins a client command's flags: the set, named name and
// writing to env's stderr, with --server, and --token when the command
// changes something (withToken; else token is ""); its -h prints usage
// (synopsis, description, examples), then the flags.
func clientFlags(name, usage string, env cliEnv, withToken bool) (fs *flag.FlagSet, server, token *string) {
	fs = flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	server = fs.String("server", defaultServer(), "backend `URL` (env MLX_METRICS_SERVER)")
	token = new(string)
	if withToken {
		token = fs.String("token", os.Getenv("MLX_METRICS_TOKEN"), "bearer `TOKEN` the backend requires of changes (env MLX_METRICS_TOKEN)")
	}
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, usage+"\n\nflags:")
		fs.PrintDefaults()
	}
	return fs, server, token
}

// usageErr is a command-line mistake: exit code 2, like the go tool.
func usageErr(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...), usage: true}
}

// parseFlags parses args allowing flags after positional arguments
// (`bench compare A B --threshold 0.1`), and returns the positionals.
// A bad flag is exit code 2; -h prints the usage and its flag.ErrHelp,
// wrapped the same way, is exit code 0 in main.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := cliflag.Parse(fs, args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &exitError{code: 2, err: err, usage: true}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// newClient is the typed client of the backend at server, sending token
// (when not empty) on changes; a server that is not an http(s) URL is a
// usage error.
func newClient(server, token string) (*apiclient.Client, error) {
	c, err := apiclient.New(server, apiclient.Options{Token: token})
	if err != nil {
		return nil, usageErr("--server %q: want an http(s) URL such as http://127.0.0.1:7878", server)
	}
	return c, nil
}

// exactlyOne refuses any number of positional arguments but one, naming
// what the command wants ("run ID", "FILE").
func exactlyOne(pos []string, what string) error {
	if len(pos) != 1 {
		return usageErr("want exactly one %s, got %s", what, plural.Count(len(pos), "argument", "arguments"))
	}
	return nil
}

// oneArgClient is the preamble of a client command that names one thing
// (a run, a job, a profile): its flags parsed, its one argument, and the
// client of the backend at *server (read once the flags are parsed).
func oneArgClient(fs *flag.FlagSet, server, token *string, args []string, what string) (*apiclient.Client, string, error) {
	pos, err := parseFlags(fs, args)
	if err != nil {
		return nil, "", err
	}
	if err := exactlyOne(pos, what); err != nil {
		return nil, "", err
	}
	c, err := newClient(*server, *token)
	return c, pos[0], err
}
