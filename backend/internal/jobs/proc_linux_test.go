package jobs

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/jobs/jobstest"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// alive reports whether pid runs (a zombie waiting for its reaper is dead).
func alive(pid int) bool {
	s, err := procStat(pid)
	return err == nil && s.State != "Z"
}

func TestKillAfterGraceReachesServers(t *testing.T) {
	h := newHarness(t, t.TempDir(), 0)
	j := h.submit("stubborn-server")
	h.waitEvent(j.ID, cellStarted)
	data, err := os.ReadFile(filepath.Join(h.dir, j.ID, jobstest.ServerPIDFile))
	if err != nil {
		t.Fatal(err)
	}
	server, _ := strconv.Atoi(string(data))
	if !alive(server) {
		t.Fatal("the server is not running")
	}
	h.svc.Cancel(j.ID)
	(<-h.clock.Armed) <- time.Time{}
	if j = h.done(j.ID); j.Status != bench.StatusCancelled {
		t.Fatalf("job = %+v", j)
	}
	// SIGKILL is delivered by the time kill(2) returns, but the process
	// is torn down asynchronously: wait for that, with a bound.
	deadline := time.Now().Add(wait)
	for alive(server) {
		if time.Now().After(deadline) {
			t.Fatal("the server outlived its runner's SIGKILL")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
