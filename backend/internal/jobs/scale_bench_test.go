package jobs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/gpu/lease"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// benchRunCounts are the stored runs BenchmarkJobsAtScale measures at;
// MLX_METRICS_BENCH_RUNS overrides them (comma-separated), e.g. to leave
// out 100000, whose set-up writes 100 k job.json files (~0.3 GB of inodes
// and a minute on a slow disk).
func benchRunCounts(b *testing.B) []int {
	env := os.Getenv("MLX_METRICS_BENCH_RUNS")
	if env == "" {
		return []int{0, 1000, 10000, 100000}
	}
	var ns []int
	for _, f := range strings.Split(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			b.Fatalf("MLX_METRICS_BENCH_RUNS: %q is not a count", f)
		}
		ns = append(ns, n)
	}
	return ns
}

// writeFinishedRuns writes n finished jobs as a backend leaves them (a
// job.json with a full log tail, an events.ndjson), directly, not through
// the runner, plus the ids file of a backend that stopped cleanly (its
// last line a checkpoint naming no job open).
func writeFinishedRuns(b *testing.B, runs string, n int) {
	b.Helper()
	if err := os.MkdirAll(runs, 0o755); err != nil {
		b.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tail := make([]string, logTailLines)
	for i := range tail {
		tail[i] = fmt.Sprintf("decode run %d: 123.4 tok/s, ttft 81.2 ms, prompt 1024 tokens", i)
	}
	events := []byte(`{"seq":1,"at":1,"type":"started","message":"holds the GPU","progress":0}` + "\n" +
		`{"seq":2,"at":2,"type":"done","message":"complete: 2 measured, 0 skipped, 0 failed of 2 cells","progress":1}` + "\n")
	var ids []byte
	for i := range n {
		id := bench.NewRunID(base.Add(time.Duration(i)*time.Minute), fmt.Sprintf("%06x", i))
		ids = append(append(ids, id...), '\n')
		status := bench.StatusDone
		if i%10 == 0 {
			status = bench.StatusFailed
		}
		code := 0
		putJob(b, runs, id, diskJob{Job: bench.Job{Profile: "quick", Status: status, CreatedAt: int64(i),
			StartedAt: int64(i), FinishedAt: int64(i) + 1, Stage: string(status), Progress: 1, ExitCode: &code,
			Message: "complete: 2 measured, 0 skipped, 0 failed of 2 cells", LogTail: tail}})
		if err := os.WriteFile(filepath.Join(runs, id, eventsFile), events, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(runs, idsFile), append(ids, checkpoint(nil)+"\n"...), 0o644); err != nil {
		b.Fatal(err)
	}
}

// dropCheckpoints makes runs a home from before the index: its ids file
// keeps only the ids.
func dropCheckpoints(b *testing.B, runs string) {
	path := filepath.Join(runs, idsFile)
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var ids []byte
	for line := range strings.Lines(string(data)) {
		if validID(strings.TrimSuffix(line, "\n")) {
			ids = append(ids, line...)
		}
	}
	if err := os.WriteFile(path, ids, 0o644); err != nil {
		b.Fatal(err)
	}
}

func openBenchService(b *testing.B, runs string) *Service {
	b.Helper()
	s, err := New(Options{RunsDir: runs, Lease: lease.New("no GPU found", lease.Options{}), Runner: []string{"true"},
		Logger: logging.Discard()})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkJobsAtScale measures what grows with the runs stored: start-up
// (New, over a runs directory with its index), the first
// GET /bench?limit=50 after it (List: the ids file's last block read, 50
// job.json read),
// the steady one the panel polls, and the one-time start of a home from
// before the open index (every job.json read, the index written).
func BenchmarkJobsAtScale(b *testing.B) {
	for _, n := range benchRunCounts(b) {
		runs := filepath.Join(b.TempDir(), "runs")
		start := time.Now()
		writeFinishedRuns(b, runs, n)
		b.Logf("%d runs written in %s", n, time.Since(start).Round(time.Millisecond))
		limit := Filter{Kind: bench.JobKind, Limit: 50}
		b.Run(fmt.Sprintf("runs=%d/start", n), func(b *testing.B) {
			for b.Loop() {
				openBenchService(b, runs).Close(context.Background())
			}
		})
		b.Run(fmt.Sprintf("runs=%d/start+first-list50", n), func(b *testing.B) {
			for b.Loop() {
				s := openBenchService(b, runs)
				if got := s.List(limit); len(got) != min(n, 50) {
					b.Fatalf("listed %d", len(got))
				}
				s.Close(context.Background())
			}
		})
		b.Run(fmt.Sprintf("runs=%d/list50", n), func(b *testing.B) {
			s := openBenchService(b, runs)
			defer s.Close(context.Background())
			s.List(limit)
			b.ReportAllocs()
			for b.Loop() {
				if got := s.List(limit); len(got) != min(n, 50) {
					b.Fatalf("listed %d", len(got))
				}
			}
		})
		b.Run(fmt.Sprintf("runs=%d/start-before-index", n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				dropCheckpoints(b, runs)
				b.StartTimer()
				openBenchService(b, runs).Close(context.Background())
			}
		})
	}
}
