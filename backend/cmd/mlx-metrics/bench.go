package main

import (
	"context"
	"fmt"
	"os"
)

// benchCommands are the subcommands of `mlx-metrics bench`.
var benchCommands = []command{
	{"run", "run a plan: start each server, measure it, write run.json and report.md", runBenchRun},
	{"plan", "write a plan from flags (models, server command, phases)", runBenchPlan},
	{"list", "list finished runs of a running backend, newest first", runBenchList},
	{"show", "show one finished run's medians", runBenchShow},
	{"compare", "compare two finished runs cell by cell", runBenchCompare},
	{"start", "start a job in a running backend from one of its profiles", runBenchStart},
	{"cancel", "stop a running backend's queued or running job", runBenchCancel},
	{"forget", "remove one run (readable or not) from a running backend's history", runBenchForget},
	{"import", "keep runs recorded by hand (their run.json) or by vLLM, GuideLLM, AIPerf in a history", runBenchImport},
	{"export", "write a run's load points in another tool's shape (vllm bench serve's)", runBenchExport},
}

// runBench dispatches `mlx-metrics bench <sub>`.
func runBench(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageErr("missing subcommand (run, plan, list, show, compare, start, cancel, forget, import, export)")
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		benchUsage()
		return nil
	}
	for _, c := range benchCommands {
		if c.name == args[0] {
			return c.run(ctx, args[1:])
		}
	}
	return usageErr("unknown subcommand %q", args[0])
}

func benchUsage() {
	fmt.Fprintln(os.Stderr, "usage: mlx-metrics bench <subcommand> [flags]\n\n"+
		"Run bench-serve benchmarks and read, compare and import their history.\n\nsubcommands:")
	for _, c := range benchCommands {
		fmt.Fprintf(os.Stderr, "  %-8s %s\n", c.name, c.short)
	}
	fmt.Fprintln(os.Stderr, "\nexamples:\n"+
		"  mlx-metrics bench plan --decode-runs 2 --decode-tokens 64 --long-context-tokens -1 > plan.json\n"+
		"  mlx-metrics bench run plan.json          # into ~/.mlx-metrics (serve's home; --home DIR for another)\n"+
		"  mlx-metrics bench list\n"+
		"  mlx-metrics bench compare 20261201T100000Z-aaaa 20261202T100000Z-bbbb\n"+
		"\nrun 'mlx-metrics bench <subcommand> -h' for its flags")
}
