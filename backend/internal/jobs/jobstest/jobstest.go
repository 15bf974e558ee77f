// Package jobstest is a scripted bench-serve runner for tests of the job
// service and the API: the test binary re-executes itself as the runner
// (the standard os/exec test trick), so jobs run real child processes whose
// behaviour the test chooses through the plan's description.
package jobstest

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// Env makes the test binary act as the runner when set to 1.
const Env = "MLX_METRICS_FAKE_RUNNER"

// Main runs the fake runner and exits when the environment asks for it;
// call it first in TestMain.
func Main() {
	switch os.Getenv(Env) {
	case "1":
		os.Exit(Runner(os.Args[1:]))
	case "server":
		// A server that ignores SIGTERM, for the stubborn-server script.
		signal.Ignore(syscall.SIGTERM)
		for {
			time.Sleep(time.Hour)
		}
	}
}

// ServerPIDFile is where the stubborn-server script writes its server's pid.
const ServerPIDFile = "server.pid"

// RunnerArgv returns the argv prefix and environment that start this test
// binary as the runner.
func RunnerArgv() (argv, env []string) {
	// Under -race a process sleeps a second at exit waiting for late
	// reports; the fake runner has nothing to wait for.
	return []string{os.Args[0], "bench", "run"}, []string{Env + "=1", "GORACE=atexit_sleep_ms=0"}
}

// Plan is a valid plan of n cells that the fake runner plays as script:
//   - ok: two cells measured, exit 0
//   - incomplete: one cell failed with a problem line, exit 1
//   - crash: exit 3 without run.json
//   - refuse: exit 2 (a plan error)
//   - block: starts a cell and waits for SIGTERM, then saves a cancelled
//     record and exits 143
//   - slow-stop: block, but after SIGTERM it waits for its stdin to close
//     before it saves and exits (a test holds it stopping while it looks)
//   - stubborn: starts a cell and ignores SIGTERM until SIGKILL
//   - stubborn-server: the same, with a server (in its own process group,
//     also ignoring SIGTERM) whose pid it writes to ServerPIDFile
func Plan(script string, n int) bench.Plan {
	p := bench.Plan{Scope: bench.ScopeAll, Description: script}
	for i := range n {
		p.Cells = append(p.Cells, bench.Cell{
			Model: "m", Kind: bench.KindTree, Configuration: fmt.Sprint("c", i),
			// Never started: the fake runner only pretends.
			Server: bench.Server{
				Argv:     []string{"fake-server", "--port", bench.PortPlaceholder},
				BaseURL:  "http://127.0.0.1:{port}/v1",
				ReadyURL: "http://127.0.0.1:{port}/v1/models",
			},
		})
	}
	return p
}

// Runner is the fake runner. It follows `bench run`'s contract:
// --plan/--out/--id/--profile, `=== cell ===` and `  problem:` lines on stdout, run.json in --out, exit 0
// complete, 1 incomplete, 2 plan error, 143 after SIGTERM.
func Runner(args []string) int {
	if len(args) < 2 || args[0] != "bench" || args[1] != "run" {
		fmt.Fprintln(os.Stderr, "fake runner: want `bench run`, got", args)
		return 2
	}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	planPath := fs.String("plan", "", "")
	out := fs.String("out", "", "")
	id := fs.String("id", "", "")
	profile := fs.String("profile", "", "")
	if err := fs.Parse(args[2:]); err != nil {
		return 2
	}
	var plan bench.Plan
	data, err := os.ReadFile(*planPath)
	if err == nil {
		err = json.Unmarshal(data, &plan)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "plan:", err)
		return 2
	}
	start := time.Now()
	rec := bench.RunRecord{ID: *id, Profile: *profile, Plan: plan, StartedAt: start.UnixMilli(),
		Machine: bench.Machine{Chip: "fake", Host: "test", OS: "linux"}}
	cell := func(key string, status bench.CellStatus, tps float64) bench.CellResult {
		c := bench.CellResult{Key: key, Model: "m", Kind: bench.KindTree, Configuration: key, Status: status}
		if tps > 0 {
			c.Samples = []bench.Sample{{Phase: bench.PhaseDecode, DecodeTokensPerSecond: tps, CompletionTokens: 192}}
		}
		return c
	}
	save := func(code int) int {
		rec.FinishedAt = time.Now().UnixMilli()
		rec.ExitCode = code
		data, _ := json.MarshalIndent(rec, "", "  ")
		os.WriteFile(filepath.Join(*out, "run.json"), data, 0o644)
		os.WriteFile(filepath.Join(*out, "report.md"), []byte("# bench-serve "+*id+"\n"), 0o644)
		return code
	}
	switch plan.Description {
	case "ok":
		fmt.Println("=== m/tree/a ===")
		fmt.Println("cold start 12 ms")
		fmt.Fprintln(os.Stderr, "server: ready")
		fmt.Println("=== m/tree/b ===")
		fmt.Print("last line without newline")
		rec.Cells = []bench.CellResult{cell("m/tree/a", bench.CellMeasured, 100), cell("m/tree/b", bench.CellMeasured, 50)}
		rec.Complete = true
		return save(0)
	case "incomplete":
		fmt.Println("=== m/tree/a ===")
		fmt.Println("  problem: m/tree/a: decode: connection refused (retried once)")
		fmt.Println("=== m/tree/b ===")
		rec.Cells = []bench.CellResult{cell("m/tree/a", bench.CellFailed, 0), cell("m/tree/b", bench.CellMeasured, 50)}
		rec.Problems = []string{"m/tree/a: decode: connection refused (retried once)"}
		return save(1)
	case "crash":
		fmt.Println("=== m/tree/a ===")
		fmt.Fprintln(os.Stderr, "panic: boom")
		return 3
	case "refuse":
		fmt.Fprintln(os.Stderr, "plan: cells[0].server.argv: empty")
		return 2
	case "block", "slow-stop":
		// Handle SIGTERM before announcing the cell: the test cancels
		// only after it saw the cell start.
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		fmt.Println("=== m/tree/a ===")
		<-term
		fmt.Println("SIGTERM: stopping the server")
		if plan.Description == "slow-stop" {
			io.Copy(io.Discard, os.Stdin)
		}
		rec.Cells = []bench.CellResult{cell("m/tree/a", bench.CellFailed, 0)}
		rec.Cells[0].Note = "cancelled"
		rec.Cancelled = true
		rec.Problems = []string{"cancelled by SIGTERM"}
		return save(143)
	case "stubborn-server":
		// Like a real runner, start the server in a process group of its
		// own; then ignore SIGTERM, leaving it running.
		signal.Ignore(syscall.SIGTERM)
		srv := exec.Command(os.Args[0])
		srv.Env = append(os.Environ(), Env+"=server")
		srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := srv.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.WriteFile(filepath.Join(*out, ServerPIDFile), []byte(fmt.Sprint(srv.Process.Pid)), 0o644)
		fmt.Println("=== m/tree/a ===")
		for {
			time.Sleep(time.Hour) // until SIGKILL
		}
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("=== m/tree/a ===")
		for {
			time.Sleep(time.Hour) // until SIGKILL
		}
	}
	fmt.Fprintln(os.Stderr, "fake runner: unknown script", plan.Description)
	return 2
}
