package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/app"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// routesOf are the route table's rows that the part p serves.
func routesOf(p app.Part) []server.Route {
	var h app.Handlers
	p.Handlers(&h)
	return app.Routes(h)
}

// bench start and bench cancel against the real bench-serve on a loopback
// port: a smoke job started from its profile, then cancelled, ends
// cancelled; a profile not there is refused with the ones that are.
func TestBenchStartAndCancel(t *testing.T) {
	b, err := app.OpenBench(t.TempDir(), "no GPU found", realRunner())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	srv := server.New(server.Options{}, routesOf(b)...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go server.Serve(srv, ln)
	defer server.Shutdown(srv)
	url := "--server=http://" + ln.Addr().String()
	ctx := context.Background()

	env, out, _ := testEnv()
	if err := benchStartCmd(ctx, []string{url, "smoke"}, env); err != nil {
		t.Fatal(err)
	}
	id, ok := strings.CutPrefix(out.String(), "started job ")
	id, _, _ = strings.Cut(id, " ")
	if !ok || !strings.Contains(out.String(), "(profile smoke): ") {
		t.Fatalf("bench start printed %q", out.String())
	}
	env, out, _ = testEnv()
	if err := benchCancelCmd(ctx, []string{url, id}, env); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "cancel asked of job "+id+" (profile smoke): ") {
		t.Fatalf("bench cancel printed %q", out.String())
	}
	done, err := b.Jobs().Done(id)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(time.Minute): // a safeguard against a hang
		t.Fatal("the cancelled job did not end")
	}
	if j, _ := b.Jobs().Get(id); j.Status != bench.StatusCancelled {
		t.Fatalf("job after cancel: %+v", j)
	}

	for _, tc := range []struct {
		name string
		cmd  func(context.Context, []string, cliEnv) error
		args []string
		code int
		want string
	}{
		{"start: a profile not there", benchStartCmd, []string{url, "nope"}, 1, "there are "},
		{"start: no profile", benchStartCmd, []string{url}, 2, "want exactly one PROFILE"},
		{"cancel: two ids", benchCancelCmd, []string{url, "a", "b"}, 2, "want exactly one job ID"},
		{"cancel: no such job", benchCancelCmd, []string{url, "nope"}, 1, "404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, _, _ := testEnv()
			err := tc.cmd(ctx, tc.args, env)
			if got := exitCode(err); got != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("exit %d, %v; want %d with %q", got, err, tc.code, tc.want)
			}
		})
	}
}
