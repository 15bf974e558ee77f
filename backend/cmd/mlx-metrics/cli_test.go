package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/app"
	"github.com/mlx-bun/mlx-metrics/backend/internal/history"
	"github.com/mlx-bun/mlx-metrics/backend/internal/ingest"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/apierror"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

func p(v float64) *float64 { return &v }
func pi(v int64) *int64    { return &v }

// fakeBackend answers the live view's snapshot as a fixed one (with what
// events cannot give: a scraped cache's ratio) and takes event batches,
// recording them and refusing as many events as a test asks (a fault the
// real route cannot be made to give), on 127.0.0.1. The happy path of both
// commands runs against the real live half: TestSnapshotOfReplayedEvents.
type fakeBackend struct {
	*httptest.Server
	mu      sync.Mutex
	batches [][]string
	auth    []string
	reject  int // events to report rejected in each batch
}

var runA = bench.HistoryEntry{
	ID: "20261201T100000Z-aaaa", Profile: "standard", Scope: "all", StartedAt: 1796119200000,
	FinishedAt: 1796119290000, DurationMs: 90000, Complete: true, Problems: []string{},
	Machine: bench.Machine{Chip: "Apple M3 Max", OS: "darwin", GPU: "no GPU found"},
	Cells: []bench.CompactCell{
		{Key: "qwen/tree/default", Status: "measured", DecodeTokensPerSecond: p(100), TTFTColdMs: p(200), PeakRssMB: p(1000),
			Spread: map[string]bench.Range{"decode": {Min: 98, Max: 102}}},
		{Key: "qwen/reference/mlx-lm", Status: "measured", DecodeTokensPerSecond: p(90), TTFTColdMs: p(250),
			Spread: map[string]bench.Range{"ttft_cold": {Min: 200, Max: 320}}},
		{Key: "gone/tree/default", Status: "measured", DecodeTokensPerSecond: p(10)},
	},
}

var runB = bench.HistoryEntry{
	ID: "20261202T100000Z-bbbb", Profile: "standard", Scope: "all", StartedAt: 1796205600000,
	FinishedAt: 1796205690000, DurationMs: 90000, Complete: false, ExitCode: 1, Problems: []string{"cell x failed"},
	Cells: []bench.CompactCell{
		// decode +10 %, ttft -10 %: faster; memory down 20 %: less.
		{Key: "qwen/tree/default", Status: "measured", DecodeTokensPerSecond: p(110), TTFTColdMs: p(180), PeakRssMB: p(800),
			Spread: map[string]bench.Range{"decode": {Min: 108, Max: 112}}},
		// decode +2 % (same); ttft +20 %, but inside both runs' spreads: same.
		{Key: "qwen/reference/mlx-lm", Status: "measured", DecodeTokensPerSecond: p(91.8), TTFTColdMs: p(300),
			Spread: map[string]bench.Range{"ttft_cold": {Min: 240, Max: 330}}},
		{Key: "new/tree/default", Status: "skipped"},
	},
}

func newFakeBackend(t *testing.T) *fakeBackend {
	t.Helper()
	fb := &fakeBackend{}
	mux := http.NewServeMux()
	writeJSON := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /api/metrics/snapshot", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, snapshot.Snapshot{
			At: 1764690060000, StartedAt: 1764690000000, Version: 42,
			Models: []snapshot.Model{{Model: "qwen3-8b", State: "resident", Loads: 1, LastLoadMs: p(4200),
				WeightsBytes: 8 << 30, KVBytes: 1 << 30}},
			Schedulers: []snapshot.Scheduler{{SchedulerSample: events.SchedulerSample{Model: "qwen3-8b", Active: 3, Capacity: 8, Queued: 2, TokensPerSecond: 140.5}}},
			Caches: []snapshot.Cache{{Model: "qwen3-8b", Prefix: &snapshot.PrefixCache{Bytes: 256 << 20,
				CapacityBytes: pi(1 << 30), Hits: 3, Misses: 1, HitRate: p(0.75)}},
				{Model: "llama-8b", KV: &snapshot.KVCache{UsageRatio: p(0.5)}}},
			Requests: snapshot.Requests{Finished: 5, ByFinish: snapshot.FinishTotals{events.FinishStop: 4, events.FinishLength: 1},
				Window: snapshot.Window{Size: 200, Count: 5, TTFTMs: &snapshot.Distribution{Count: 5, P50: 85, P95: 120, P99: 120, Max: 120, Mean: 90}}},
		})
	})
	mux.HandleFunc("POST /api/metrics/events", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		fb.mu.Lock()
		fb.batches = append(fb.batches, lines)
		fb.auth = append(fb.auth, r.Header.Get("Authorization"))
		rej := min(fb.reject, len(lines))
		fb.mu.Unlock()
		// As the real route answers: 400 with the error when nothing was accepted.
		reply := ingest.Reply{Accepted: len(lines) - rej, Rejected: rej, Errors: []ingest.Rejection{}}
		for i := range rej {
			reply.Errors = append(reply.Errors, ingest.Rejection{Line: i + 1, Reason: "refused by the test"})
		}
		if reply.Accepted == 0 {
			d := apierror.New(400, fmt.Sprintf("no event accepted: %d rejected", rej)).Error
			reply.Error = &d
			writeJSON(w, 400, reply)
			return
		}
		writeJSON(w, 200, reply)
	})
	fb.Server = httptest.NewServer(mux)
	t.Cleanup(fb.Close)
	return fb
}

// realBench serves bench-serve's real routes (history, jobs, profiles)
// on a loopback port, its history holding entries, and returns the
// --server flag that names it: the client commands' happy paths run
// against the backend itself, the fake above only injects faults.
func realBench(t *testing.T, entries ...bench.HistoryEntry) string {
	t.Helper()
	home := t.TempDir()
	h, err := history.Open(filepath.Join(home, "metrics", "history"), history.Options{RunsDir: filepath.Join(home, "metrics", "bench", "runs")})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := h.Put(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := app.OpenBench(home, "no GPU found", realRunner())
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Options{}, routesOf(b)...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go server.Serve(srv, ln)
	t.Cleanup(func() {
		server.Shutdown(srv)
		b.Close(context.Background())
	})
	return "--server=http://" + ln.Addr().String()
}

func testEnv() (cliEnv, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return cliEnv{stdout: &out, stderr: &errb}, &out, &errb
}

// exitCode is what run() would exit with for err.
func exitCode(err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

func TestClientCommands(t *testing.T) {
	fb := newFakeBackend(t)
	srv := "--server=" + fb.URL // the live view's snapshot, as a fixed one
	real := realBench(t, runA, runB)
	dead := "--server=http://127.0.0.1:1"
	tests := []struct {
		name     string
		cmd      func(context.Context, []string, cliEnv) error
		args     []string
		code     int
		contains []string // in stdout, or in the error when code != 0
	}{
		{"snapshot table", snapshotCmd, []string{srv}, 0, []string{
			"version 42", "up 1 min 00 s", "qwen3-8b  resident  1      4.20 s     8.00 GiB", "140.5", "75.0%",
			"llama-8b kv - - 50.0% -", // a scraped ratio: no bytes to show
			"5 finished, stop 4, length 1", "TIMING (ms)", "ttft", "85.0"}},
		{"snapshot json", snapshotCmd, []string{srv, "--json"}, 0, []string{`"version":42`}},
		{"snapshot help", snapshotCmd, []string{"-h"}, 0, nil},
		{"snapshot bad flag", snapshotCmd, []string{"--bogus"}, 2, []string{"bogus"}},
		{"snapshot extra arg", snapshotCmd, []string{srv, "x"}, 2, []string{"no arguments"}},
		{"snapshot bad server", snapshotCmd, []string{"--server=localhost:7878"}, 2, []string{"http(s) URL"}},
		{"snapshot backend down", snapshotCmd, []string{dead}, 1, []string{"is the backend running?"}},

		{"list", benchListCmd, []string{real}, 0, []string{
			"20261202T100000Z-bbbb  standard  2026-12-02 10:00:00Z  1 min 30 s  3      incomplete (exit 1), 1 problem",
			"20261201T100000Z-aaaa  standard  2026-12-01 10:00:00Z  1 min 30 s  3      complete"}},
		{"list json", benchListCmd, []string{real, "--json"}, 0, []string{`"runs": [`}},
		{"list bad limit", benchListCmd, []string{real, "--limit=0"}, 2, []string{"--limit"}},
		{"list limit over the route's", benchListCmd, []string{real, "--limit=1001"}, 2, []string{"from 1 to 1000"}},

		{"show", benchShowCmd, []string{runA.ID, real}, 0, []string{"profile   standard (all)", "duration  1 min 30 s", "qwen/tree/default", "100.0", "200.0"}},
		{"show json", benchShowCmd, []string{real, "--json", runA.ID}, 0, []string{`"id": "20261201T100000Z-aaaa"`, `"decodeTokensPerSecond": 100`}},
		{"show unknown", benchShowCmd, []string{real, "nope"}, 1, []string{`GET /history/nope: no finished run "nope" in history (404)`}},
		{"show no id", benchShowCmd, []string{real}, 2, []string{"one run ID"}},

		{"compare", benchCompareCmd, []string{runA.ID, runB.ID, real, "--threshold", "5"}, 0, []string{
			"outside the other's spread", "noise floor",
			"qwen/tree/default DECODE tok/s 100.0 (98.0-102.0) 110.0 (108.0-112.0) +10.0% faster",
			"qwen/tree/default COLD TTFT ms 200.0 180.0 -10.0% same (one sample, under the noise floor x1.25 and 20 ms)",
			"qwen/tree/default PEAK RSS MiB 1000.0 800.0 -20.0% less",
			"qwen/tree/default (cell) FASTER",
			"qwen/reference/mlx-lm DECODE tok/s 90.0 91.8 +2.0% same",
			"qwen/reference/mlx-lm COLD TTFT ms 250.0 (200.0-320.0) 300.0 (240.0-330.0) +20.0% same (inside the spread)",
			"qwen/reference/mlx-lm (cell) SAME",
			"gone/tree/default only in A",
			"new/tree/default only in B",
			"verdict: faster"}},
		{"compare fails on regressions when asked", benchCompareCmd, []string{real, "--fail-on-regression", "5", runB.ID, runA.ID}, 1, []string{"2 regressions over 5%"}}, // decode -9%, memory +25% (ttft +11%, one sample: noise)
		{"compare fails on one regression", benchCompareCmd, []string{real, "--fail-on-regression", "15", runB.ID, runA.ID}, 1, []string{"1 regression over 15%"}},
		{"compare within the regression bound", benchCompareCmd, []string{real, "--fail-on-regression", "30", runB.ID, runA.ID}, 0, []string{"verdict: slower"}},
		{"compare wide threshold", benchCompareCmd, []string{real, "--threshold=50", runA.ID, runB.ID}, 0, []string{"verdict: same", "(threshold 50.0%)"}},
		{"compare threshold as a fraction: deprecated, kept", benchCompareCmd, []string{real, "--threshold=0.5", runA.ID, runB.ID}, 0, []string{"verdict: same", "(threshold 50.0%)"}},
		{"compare one id", benchCompareCmd, []string{real, runA.ID}, 2, []string{"two run IDs"}},
		{"compare bad threshold", benchCompareCmd, []string{real, "--threshold=100", "a", "b"}, 2, []string{"--threshold must be a percentage"}},

		// Last: it changes the history the rows above read.
		{"forget", benchForgetCmd, []string{real, runB.ID}, 0, []string{"forgot run " + runB.ID}},
		{"forgotten", benchShowCmd, []string{real, runB.ID}, 1, []string{"(404)"}},
		{"list after forget", benchListCmd, []string{real}, 0, []string{"20261201T100000Z-aaaa  standard"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, out, _ := testEnv()
			err := tc.cmd(context.Background(), tc.args, env)
			if got := exitCode(err); got != tc.code {
				t.Fatalf("exit code %d (err %v), want %d", got, err, tc.code)
			}
			text := out.String()
			if err != nil {
				text = err.Error()
			}
			// Column widths are tabwriter's business: compare words.
			words := strings.Join(strings.Fields(text), " ")
			for _, want := range tc.contains {
				if !strings.Contains(words, strings.Join(strings.Fields(want), " ")) {
					t.Errorf("output lacks %q:\n%s", want, text)
				}
			}
		})
	}
}

// fakePacer is a clock that moves only when replay sleeps.
type fakePacer struct {
	*clock.Fake
	sleeps []time.Duration
}

func (f *fakePacer) Sleep(_ context.Context, d time.Duration) error {
	f.sleeps = append(f.sleeps, d)
	f.Advance(d)
	return nil
}

func writeEvents(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.ndjson")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func sample(at int64) string {
	return `{"type":"scheduler.sample","at":` + jsonInt(at) + `,"data":{"model":"m","active":1,"capacity":4,"queued":0,"tokensPerSecond":10}}`
}

func jsonInt(v int64) string { b, _ := json.Marshal(v); return string(b) }

func TestReplay(t *testing.T) {
	const now = 1_764_690_000_000
	good := writeEvents(t, sample(1000), "", sample(1000), sample(3000), `{"type":"job.state","at":3000,"data":{}}`, sample(5000))
	bad := writeEvents(t, sample(1000), `{"type":"scheduler.sample","at":2000,"data":{"model":"m"}}`)
	// Another type's at is never checked: one far away neither shifts nor
	// stretches the replay; it goes with the core event before it.
	far := `{"type":"catalog.changed","at":253402300799999}`
	farOff := writeEvents(t, far, sample(1000), sample(3000), far)
	tests := []struct {
		name        string
		args        []string
		reject      int
		code        int
		wantBatches []int           // events per POST
		wantSleeps  []time.Duration // waits asked of the pacer
		wantAuth    string
		contains    string  // in stdout or the error
		inStderr    string  // the reasons given for rejections
		wantAts     []int64 // the at of each posted event, when checked
	}{
		{name: "moved to now, gaps kept", args: []string{good}, wantBatches: []int{5},
			wantAts: []int64{now - 4000, now - 4000, now - 2000, now - 2000, now}},
		{name: "paced: each stamped when due", args: []string{good, "--speed=2"}, wantBatches: []int{2, 2, 1},
			wantSleeps: []time.Duration{time.Second, time.Second}, wantAts: []int64{now, now, now + 1000, now + 1000, now + 2000}},
		{name: "far ignored events, moved", args: []string{farOff}, wantBatches: []int{4},
			wantAts: []int64{now - 2000, now - 2000, now, now}},
		{name: "far ignored events, paced", args: []string{farOff, "--speed=2"}, wantBatches: []int{2, 2},
			wantSleeps: []time.Duration{time.Second}, wantAts: []int64{now, now, now + 1000, now + 1000}},
		{name: "as recorded", args: []string{"--as-recorded", good}, wantBatches: []int{5},
			wantAts: []int64{1000, 1000, 3000, 3000, 5000}},
		{name: "all at once", args: []string{good}, wantBatches: []int{5}, contains: "replayed 5 events: 5 accepted, 0 ignored, 0 rejected"},
		{name: "small batches", args: []string{"--batch=2", good}, wantBatches: []int{2, 2, 1}},
		{name: "paced at 2x", args: []string{good, "--speed=2"}, wantBatches: []int{2, 2, 1},
			wantSleeps: []time.Duration{time.Second, time.Second}},
		{name: "token", args: []string{"--token=s3cret", good}, wantBatches: []int{5}, wantAuth: "Bearer s3cret"},
		{name: "bad line sends nothing", args: []string{bad}, code: 1, contains: "events.ndjson:2: active: missing"},
		{name: "rejections fail", args: []string{good}, reject: 1, code: 1, wantBatches: []int{5}, contains: "rejected 1 event",
			inStderr: "rejected event 1: refused by the test"},
		{name: "rejections numbered across batches", args: []string{"--batch=3", good}, reject: 1, code: 1, wantBatches: []int{3, 2},
			contains: "rejected 2 events", inStderr: "rejected event 4: refused by the test"},
		{name: "nothing accepted", args: []string{good}, reject: 5, code: 1, wantBatches: []int{5}, contains: "POST /events: no event accepted: 5 rejected (400)"},
		{name: "missing file", args: []string{"/nonexistent.ndjson"}, code: 1, contains: "no such file"},
		{name: "no file", args: []string{}, code: 2, contains: "exactly one FILE"},
		{name: "negative speed", args: []string{"--speed=-1", good}, code: 2, contains: "--speed"},
		{name: "NaN speed", args: []string{"--speed=NaN", good}, code: 2, contains: "--speed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fb := newFakeBackend(t)
			fb.reject = tc.reject
			env, out, errOut := testEnv()
			clk := &fakePacer{Fake: clock.NewFake(time.UnixMilli(now))}
			env.clock = clk
			err := eventsCmd(context.Background(), append([]string{"replay", "--server", fb.URL}, tc.args...), env)
			if got := exitCode(err); got != tc.code {
				t.Fatalf("exit code %d (err %v), want %d", got, err, tc.code)
			}
			text := out.String()
			if err != nil {
				text = err.Error()
			}
			if !strings.Contains(text, tc.contains) {
				t.Errorf("output %q lacks %q", text, tc.contains)
			}
			if !strings.Contains(errOut.String(), tc.inStderr) {
				t.Errorf("stderr %q lacks %q", errOut.String(), tc.inStderr)
			}
			var sizes []int
			var ats []int64
			for _, b := range fb.batches {
				sizes = append(sizes, len(b))
				for _, line := range b {
					ev, err := events.Parse([]byte(line))
					if err != nil {
						t.Errorf("posted an invalid line %q: %v", line, err)
					}
					if strings.Contains(line, `"data"`) {
						t.Errorf("posted the envelope form, not the host's flat form: %s", line)
					}
					ats = append(ats, ev.At)
				}
			}
			if tc.wantAts != nil && !slices.Equal(ats, tc.wantAts) {
				t.Errorf("posted at %v, want %v", ats, tc.wantAts)
			}
			if !slices.Equal(sizes, tc.wantBatches) {
				t.Errorf("batches %v, want %v", sizes, tc.wantBatches)
			}
			if !slices.Equal(clk.sleeps, tc.wantSleeps) {
				t.Errorf("sleeps %v, want %v", clk.sleeps, tc.wantSleeps)
			}
			for _, a := range fb.auth {
				if a != tc.wantAuth {
					t.Errorf("Authorization %q, want %q", a, tc.wantAuth)
				}
			}
		})
	}
}

// A replay stopped before it sent anything says so, in the singular for one
// event.
func TestReplayStopped(t *testing.T) {
	fb := newFakeBackend(t)
	env, _, _ := testEnv()
	env.clock = clock.NewFake(time.UnixMilli(1_764_690_000_000))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := eventsCmd(ctx, []string{"replay", "--server", fb.URL, writeEvents(t, sample(1000))}, env)
	if err == nil || err.Error() != "stopped after 0 of 1 event: context canceled" || len(fb.batches) != 0 {
		t.Fatalf("err = %v, %d batches sent", err, len(fb.batches))
	}
}

func TestProgress(t *testing.T) {
	tests := []struct {
		name  string
		tty   bool
		every time.Duration // between steps
		steps []int
		want  string
	}{
		{"plain lines at each tenth", false, time.Second, []int{1, 5, 9, 10}, "job: 1/10 (10%)\njob: 5/10 (50%)\njob: 9/10 (90%)\njob: 10/10 (100%)\n"},
		{"plain skips nothing when jumping", false, time.Second, []int{10}, "job: 10/10 (100%)\n"},
		{"bar redrawn in place", true, time.Second, []int{5, 10},
			"\rjob [===============>              ] 5/10  50%\rjob [==============================] 10/10 100%\n"},
		{"bar redrawn at most ten times a second, the end always", true, 50 * time.Millisecond, []int{2, 3, 4, 10},
			"\rjob [======>                       ] 2/10  20%\rjob [============>                 ] 4/10  40%\rjob [==============================] 10/10 100%\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			clk := clock.NewFake(time.Unix(0, 0))
			pr := newProgress(cliEnv{stderr: &buf, tty: tc.tty, clock: clk}, "job", 10)
			for _, n := range tc.steps {
				clk.Advance(tc.every)
				pr.set(n)
			}
			pr.done()
			pr.done()
			if buf.String() != tc.want {
				t.Errorf("got %q\nwant %q", buf.String(), tc.want)
			}
		})
	}
}

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		args []string
		want int
	}{
		{[]string{"no-such-command"}, 2},
		{[]string{"--help"}, 0},
		{[]string{"snapshot", "--bogus"}, 2},
		{[]string{"snapshot", "--help"}, 0},
		{[]string{"events"}, 2},
		{[]string{"events", "--help"}, 0},
		{[]string{"events", "rewind"}, 2},
		{[]string{"bench", "list", "-h"}, 0},
		{[]string{"bench", "show", "--bogus"}, 2},
		{[]string{"bench", "compare", "only-one"}, 2},
		{[]string{"bench", "show", "--server=http://127.0.0.1:1", "x"}, 1},
	}
	// run writes usage to the real stderr; keep the test output quiet.
	stderr := os.Stderr
	os.Stderr, _ = os.Open(os.DevNull)
	defer func() { os.Stderr = stderr }()
	for _, tc := range tests {
		if got := run(context.Background(), tc.args); got != tc.want {
			t.Errorf("run(%q) = %d, want %d", tc.args, got, tc.want)
		}
	}
}
