package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// loadEngine is a reference engine whose capacity its settings fix: rows
// decoding at decodeRate steps a second, each request holding a row for
// outputTokens steps (its prefill step yields the first token; the prompt
// is too short for its prefill to cost anything). Slow steps (50 ms) and
// few requests a second keep the machine's own hiccups (the race
// detector, other packages' tests) small beside the model's times.
const (
	loadDecodeRate = 20.0
	loadRows       = 4
	loadOutput     = 5
	loadCapacity   = loadRows * loadDecodeRate / loadOutput // 16 requests/s
)

func loadCell() bench.Cell {
	return engineCell(bench.KindTree, "load",
		"--decode-rate", fmt.Sprint(loadDecodeRate), "--batch-capacity", fmt.Sprint(loadRows),
		"--batch-slowdown", "0", "--prefill-rate", "1000000", "--load-ms", "50")
}

func loadPlan(l bench.Load) bench.Plan {
	l.Workload = bench.Workload{Input: bench.Lengths{Tokens: 8}, Output: bench.Lengths{Tokens: loadOutput}}
	return bench.Plan{
		Scope: bench.ScopeScoped, Models: []string{"reference-sim"},
		Cells:  []bench.Cell{loadCell()},
		Phases: bench.Phases{LoadOnly: true, Load: &l},
	}
}

// --find-max-rate finds the capacity the engine's settings imply, within
// 10 %, and each point's figures are those of its requests' records,
// recomputed here.
func TestLoadFindsTheEnginesCapacity(t *testing.T) {
	slo := bench.SLO{E2ELMs: 2000}
	plan := loadPlan(bench.Load{
		Arrival: bench.ArrivalConstant, Requests: 40, WarmupRequests: 4, Seed: 7,
		Goodput:     &slo,
		FindMaxRate: &bench.FindMaxRate{StartRate: 8, MaxPoints: 8},
	})
	out := &syncBuffer{}
	rec, dir := runPlan(t, context.Background(), plan, out)
	c := rec.Cells[0]
	if c.Status != bench.CellMeasured || c.MaxRate == nil {
		t.Fatalf("status %s, max rate %+v, problems %q\n%s", c.Status, c.MaxRate, c.Problems, out)
	}
	if got := c.MaxRate.Rate; math.Abs(got-loadCapacity)/loadCapacity > 0.10 {
		t.Errorf("max rate %g, want within 10 %% of the engine's capacity %g (%s)\n%s", got, loadCapacity, c.MaxRate.Note, out)
	}
	for _, lp := range c.LoadPoints {
		checkPointAgainstRecords(t, dir, lp, slo)
	}
	t.Logf("%s", out)
}

// A closed loop of as many streams as the engine has rows keeps them all
// busy: its throughput is the capacity (never above it).
func TestLoadClosedLoopAtTheBatchSize(t *testing.T) {
	plan := loadPlan(bench.Load{Concurrencies: []int{1, loadRows}, Requests: 24, WarmupRequests: 4})
	out := &syncBuffer{}
	rec, dir := runPlan(t, context.Background(), plan, out)
	c := rec.Cells[0]
	if c.Status != bench.CellMeasured || len(c.LoadPoints) != 2 {
		t.Fatalf("status %s, %d points, problems %q\n%s", c.Status, len(c.LoadPoints), c.Problems, out)
	}
	one, full := c.LoadPoints[0], c.LoadPoints[1]
	// One stream: its prefill step alone costs nothing, then a request
	// takes output-1 decode steps.
	if want := loadDecodeRate / (loadOutput - 1); !physical(one.RequestThroughput, want, 0.05, 3, true) {
		t.Errorf("one stream: %.2f requests/s, want about %.2f", one.RequestThroughput, want)
	}
	if !physical(full.RequestThroughput, loadCapacity, 0.05, 3, true) {
		t.Errorf("%d streams: %.2f requests/s, want about %.2f", loadRows, full.RequestThroughput, loadCapacity)
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil || !strings.Contains(string(report), "| 4 streams | 24 | 0 |") {
		t.Errorf("report.md has no row of the 4-stream point (%v):\n%s", err, report)
	}
	t.Logf("%s", report)
	for _, lp := range c.LoadPoints {
		if lp.Concurrency == 0 || lp.OfferedRate != 0 || lp.Completed != 24 || lp.Warmup != 4 {
			t.Errorf("point %+v", lp)
		}
		checkPointAgainstRecords(t, dir, lp, bench.SLO{})
	}
}

// checkPointAgainstRecords recomputes a point's figures from its NDJSON
// records, independently of gpu/load's summary.
func checkPointAgainstRecords(t *testing.T, dir string, lp bench.LoadPoint, slo bench.SLO) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, lp.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ttft, tpot, e2e, itl []float64
	var firstSched, lastEnd = math.Inf(1), math.Inf(-1)
	counted, ok, good, warm := 0, 0, 0, 0
	var out int64
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r bench.RequestRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Warmup {
			warm++
			continue
		}
		counted++
		firstSched = math.Min(firstSched, r.ScheduledMs)
		if r.Error != "" {
			continue
		}
		ok++
		if r.OutputTokens != loadOutput {
			t.Errorf("request %d: %d output tokens, want %d (max_tokens with ignore_eos)", r.Index, r.OutputTokens, loadOutput)
		}
		out += r.OutputTokens
		lastEnd = math.Max(lastEnd, r.SentMs+r.E2ELMs)
		ttft, e2e = append(ttft, r.TTFTMs), append(e2e, r.E2ELMs)
		wantTPOT := (r.E2ELMs - r.TTFTMs) / float64(r.OutputTokens-1)
		if math.Abs(r.TPOTMs-wantTPOT) > 1e-9 {
			t.Errorf("request %d: TPOT %v, want (E2EL-TTFT)/(n-1) = %v", r.Index, r.TPOTMs, wantTPOT)
		}
		tpot = append(tpot, r.TPOTMs)
		itl = append(itl, r.ITLMs...)
		if (slo.TTFTMs == 0 || r.TTFTMs <= slo.TTFTMs) && (slo.E2ELMs == 0 || r.E2ELMs <= slo.E2ELMs) && (slo.TPOTMs == 0 || r.TPOTMs <= slo.TPOTMs) {
			good++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if counted != lp.Requests || ok != lp.Completed || warm != lp.Warmup {
		t.Errorf("point %d: %d requests %d ok %d warm-up in the file, summary %d %d %d", lp.Point, counted, ok, warm, lp.Requests, lp.Completed, lp.Warmup)
	}
	near := func(what string, got, want float64) {
		if math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
			t.Errorf("point %d %s: %v, recomputed %v", lp.Point, what, got, want)
		}
	}
	dur := (lastEnd - firstSched) / 1000
	near("duration", lp.DurationS, dur)
	near("request throughput", lp.RequestThroughput, float64(ok)/dur)
	near("output throughput", lp.OutputThroughput, float64(out)/dur)
	for _, d := range []struct {
		name string
		dist bench.Dist
		xs   []float64
	}{{"ttft", lp.TTFT, ttft}, {"tpot", lp.TPOT, tpot}, {"e2el", lp.E2EL, e2e}, {"itl", lp.ITL, itl}} {
		sort.Float64s(d.xs)
		near(d.name+" p50", d.dist.Median, interpolated(d.xs, 0.50))
		near(d.name+" p99", d.dist.P99, interpolated(d.xs, 0.99))
		near(d.name+" p99.9", d.dist.P999, interpolated(d.xs, 0.999))
	}
	if slo != (bench.SLO{}) {
		if lp.Goodput == nil {
			t.Fatalf("point %d: no goodput with an SLO", lp.Point)
		}
		near("goodput", *lp.Goodput, float64(good)/dur)
	}
}

// interpolated is the q-quantile of sorted xs, interpolating linearly
// between the ranks around q*(n-1) (numpy's default), written apart from
// bench.Percentile so each checks the other.
func interpolated(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	h := q * float64(len(xs)-1)
	i := int(h)
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	return xs[i] + (h-float64(i))*(xs[i+1]-xs[i])
}
