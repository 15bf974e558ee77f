// Command mlx-metrics is the metrics-and-performance module of an MLX LLM
// serving host: the backend (serve), the bench-serve runner and planner
// (bench), the reference engine (engine), and tools around them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// command is one subcommand, in the manner of the go tool.
type command struct {
	name  string
	short string
	run   func(ctx context.Context, args []string) error
}

// commands lists the subcommands; the first is the default.
var commands = []command{
	{"serve", "run the backend with the panel (the default)", runServe},
	{"snapshot", "print a running backend's live metrics as tables", runSnapshot},
	{"events", "replay a recorded NDJSON event file into a running backend", runEvents},
	{"engine", "serve the reference engine (a simulator of an OpenAI-compatible server)", runEngine},
	{"bench", "bench-serve: run, plan, list, show, compare, forget, import", runBench},
}

// exitError carries an exit code out of a subcommand; usage marks a
// command-line mistake, which main follows with a pointer at -h.
type exitError struct {
	code  int
	err   error
	usage bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	ctx, stop := signalContext()
	defer stop()
	os.Exit(run(ctx, os.Args[1:]))
}

// signalContext is cancelled by the first interrupt or SIGTERM, which asks
// the command to stop in good order; a second one then has its default
// effect and ends the process at once, as a user pressing Ctrl-C again
// expects when a shutdown waits (on a runner that ignores SIGTERM, say).
func signalContext() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // the next signal is the system's to act on
	}()
	return ctx, stop
}

func run(ctx context.Context, args []string) int {
	name := commands[0].name
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		usage()
		return 0
	}
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	for _, c := range commands {
		if c.name != name {
			continue
		}
		if err := c.run(ctx, args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0 // -h printed the usage, as the go tool does
			}
			// The message may quote a backend's answer: shown safe and cut.
			fmt.Fprintf(os.Stderr, "mlx-metrics %s: %s\n", helpName(name, args), termLine(err.Error()))
			var ee *exitError
			if errors.As(err, &ee) {
				if ee.usage {
					fmt.Fprintf(os.Stderr, "run 'mlx-metrics %s -h' for usage\n", helpName(name, args))
				}
				return ee.code
			}
			return 1
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "mlx-metrics: unknown command %q\nrun 'mlx-metrics -h' for the commands\n", name)
	return 2
}

// helpName is the command whose -h helps with args: `bench run`, not
// `bench`, when a bench subcommand was given.
func helpName(name string, args []string) string {
	if len(args) == 0 {
		return name
	}
	switch {
	case name == "events" && args[0] == "replay":
		return "events replay"
	case name == "bench":
		for _, c := range benchCommands {
			if c.name == args[0] {
				return name + " " + c.name
			}
		}
	}
	return name
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: mlx-metrics <command> [flags]\n\n"+
		"Live serving metrics, a panel and bench-serve jobs for an MLX LLM host;\n"+
		"with no command it serves (the same as 'mlx-metrics serve').\n\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", c.name, c.short)
	}
	fmt.Fprintln(os.Stderr, "\nexamples:\n"+
		"  mlx-metrics serve --reference-engine   # the backend, the panel and simulated traffic\n"+
		"  mlx-metrics snapshot                   # the live figures of a running backend\n"+
		"  mlx-metrics bench list                 # the stored benchmark runs\n"+
		"\nrun 'mlx-metrics <command> -h' for a command's flags")
}
