package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/app"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// killParentEnv makes the test binary the runner's supervising parent:
// bench-serve on the home the variable names, starting one smoke run and
// printing its events, one a line, until it is killed.
const killParentEnv = "MLX_METRICS_TEST_KILL_PARENT"

// apiGet answers GET path from b's routes, in process.
func apiGet(b *app.Bench, method, path, body string) (int, []byte, error) {
	srv := server.New(server.Options{}, routesOf(b)...)
	req := httptest.NewRequest(method, server.APIPrefix+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := srv.Test(req, -1)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	return res.StatusCode, data, err
}

// killParent is the process killParentEnv asks for: it exits only on error
// (or is killed, which is the point).
func killParent() int {
	fail := func(err error) int { fmt.Println("error", err); return 1 }
	b, err := app.OpenBench(os.Getenv(killParentEnv), "no GPU found", realRunner())
	if err != nil {
		return fail(err)
	}
	code, data, err := apiGet(b, "POST", "/bench", `{"profile":"smoke"}`)
	var v bench.JobView
	if err == nil && code != 202 {
		err = fmt.Errorf("POST /bench: %d %s", code, data)
	}
	if err == nil {
		err = json.Unmarshal(data, &v)
	}
	if err != nil {
		return fail(err)
	}
	id := v.Job().ID
	fmt.Println("job", id)
	for after := 0; ; {
		evs, changed, ended, err := b.Jobs().Events(id, after)
		if err != nil {
			return fail(err)
		}
		for _, ev := range evs {
			fmt.Println("event", ev.Seq, ev.Type)
			after = ev.Seq
		}
		if ended {
			fmt.Println("ended")
			select {} // until killed
		}
		<-changed
	}
}

// startKillParent starts the supervising parent on home and returns it
// with its job's id and its event lines.
func startKillParent(t *testing.T, home string) (*exec.Cmd, string, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), killParentEnv+"="+home, "GORACE=atexit_sleep_ms=0")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if id, ok := strings.CutPrefix(lines.Text(), "job "); ok {
			return cmd, id, lines
		}
		if strings.HasPrefix(lines.Text(), "error ") {
			break
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	t.Fatalf("the supervising parent did not start its run: %s", lines.Text())
	return nil, "", nil
}

// smokeEvents is about how many events a smoke run has (38 on the
// development machine, the last one its end); kill points are drawn up to
// it, so a few fall after the run's end.
const smokeEvents = 40

// TestKilledBackendKeepsTheRun: kill -9 of the runner's supervising parent
// (serve's bench-serve) at a random event of a real smoke run leaves the
// run's run.json, and the restarted backend's recovery keeps it in
// history. The runner outlives its pipes: before it kept on through a
// broken stdout (SIGPIPE), most runs were lost. Kill points start after
// the runner's first line ("run <id>: ..."): before it, the runner is
// still starting and a kill is the "stopped before it measured" case.
func TestKilledBackendKeepsTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("20 real smoke runs")
	}
	const tries = 20
	rng := rand.New(rand.NewPCG(38, 3))
	home := t.TempDir()
	kept := 0
	for try := range tries {
		killAt := 2 + rng.IntN(smokeEvents-1) // event 1 is "started"
		parent, id, lines := startKillParent(t, home)
		seen := 0
		for seen < killAt && lines.Scan() {
			if f := strings.Fields(lines.Text()); len(f) == 3 && f[0] == "event" {
				seen, _ = strconv.Atoi(f[1])
			} else if lines.Text() == "ended" {
				break
			}
		}
		parent.Process.Signal(syscall.SIGKILL)
		parent.Wait()

		b, err := app.OpenBench(home, "no GPU found", realRunner())
		if err != nil {
			t.Fatal(err)
		}
		done, err := b.Jobs().Done(id)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(time.Minute): // a safeguard against a hang
			t.Fatalf("try %d: job %s not settled after the restart", try, id)
		}
		code, data, err := apiGet(b, "GET", "/history/"+id, "")
		_, statErr := os.Stat(filepath.Join(home, "metrics", "bench", "runs", id, "run.json"))
		if code == 200 && err == nil && statErr == nil {
			kept++
		} else {
			j, _ := b.Jobs().Get(id)
			t.Errorf("try %d, killed after event %d of %d: run.json %v, GET /history: %d %.200s; job %s: %s", try, killAt, seen, statErr, code, data, j.Status, j.Error)
		}
		if err := b.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d of %d runs kept", kept, tries)
}
