package main

import (
	"context"
	"fmt"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// `bench start` and `bench cancel`: the panel's Run and Cancel buttons, for
// a terminal or a script.

func runBenchStart(ctx context.Context, args []string) error {
	return benchStartCmd(ctx, args, osEnv())
}

func runBenchCancel(ctx context.Context, args []string) error {
	return benchCancelCmd(ctx, args, osEnv())
}

// benchStartCmd starts a job from a profile of the backend's plans
// directory and prints it; the job runs in the backend, which keeps it.
func benchStartCmd(ctx context.Context, args []string, env cliEnv) error {
	fs, server, token := clientFlags("bench start", "usage: mlx-metrics bench start [--server URL] [--token TOKEN] PROFILE\n\n"+
		"Starts a bench-serve job in a running backend from one of its profiles (the plans in\n"+
		"<home>/metrics/bench/plans/, as the panel's Run button does) and prints the job: queued\n"+
		"while another holds the GPU, else running. Follow it in the panel or with bench list.\n\n"+
		"example:\n  mlx-metrics bench start smoke", env, true)
	c, arg, err := oneArgClient(fs, server, token, args, "PROFILE")
	if err != nil {
		return err
	}
	j, err := c.Start(ctx, arg)
	if err != nil {
		return err
	}
	printJob(env, "started", j)
	return nil
}

// benchCancelCmd stops a queued or running job.
func benchCancelCmd(ctx context.Context, args []string, env cliEnv) error {
	fs, server, token := clientFlags("bench cancel", "usage: mlx-metrics bench cancel [--server URL] [--token TOKEN] ID\n\n"+
		"Stops a queued or running bench-serve job (its runner stops its servers and writes its\n"+
		"record first) and prints it. A job that had ended is printed as it ended.\n\n"+
		"example:\n  mlx-metrics bench cancel 20261202T100000Z-bbbb", env, true)
	c, arg, err := oneArgClient(fs, server, token, args, "job ID")
	if err != nil {
		return err
	}
	j, err := c.Cancel(ctx, arg)
	if err != nil {
		return err
	}
	printJob(env, "cancel asked of", j)
	return nil
}

// printJob says what was done to job j and where it stands.
func printJob(env cliEnv, done string, j bench.JobView) {
	line := fmt.Sprintf("%s job %s (profile %s): %s", done, termSafe(j.ID), termSafe(j.Profile), j.Status)
	if j.Message != nil && *j.Message != "" {
		line += ", " + termSafe(*j.Message)
	}
	fmt.Fprintln(env.stdout, line)
}
