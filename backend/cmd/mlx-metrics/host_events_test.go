package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/app"
	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/backend/internal/health"
	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// hostSession is what the host publishes for one model's load and three
// requests, in its flat form, stamped relative to base.
func hostSession(base int64) string {
	const m = "mlx-community/Qwen3-4B-4bit"
	lines := []string{
		`{"type":"catalog.changed","at":%d}`,
		`{"type":"model.load","at":%d,"model":"` + m + `","phase":"started"}`,
		`{"type":"model.load","at":%d,"model":"` + m + `","phase":"finished","ms":2400,"weightsBytes":2263000000,"resumed":false}`,
		`{"type":"model.memory","at":%d,"model":"` + m + `","weightsBytes":2263000000,"kvBytes":1000,"prefixCacheBytes":500}`,
		`{"type":"scheduler.sample","at":%d,"model":"` + m + `","active":3,"capacity":8,"queued":1,"tokensPerSecond":120.5}`,
		`{"type":"cache.sample","at":%d,"model":"` + m + `","cache":"kv","bytes":1000,"capacityBytes":4000,"hits":null,"misses":null}`,
		`{"type":"cache.sample","at":%d,"model":"` + m + `","cache":"prefix","bytes":50331648,"capacityBytes":null,"hits":768,"misses":1737}`,
		`{"type":"request.finished","at":%d,"model":"` + m + `","requestId":"r1","finish":"stop","promptTokens":812,"cachedPromptTokens":768,"completionTokens":64,"queueMs":null,"ttftMs":88.1,"prefillTokensPerSecond":null,"decodeTokensPerSecond":60,"totalMs":1154}`,
		`{"type":"request.finished","at":%d,"model":"` + m + `","requestId":"r2","finish":"length","promptTokens":100,"cachedPromptTokens":0,"completionTokens":256,"queueMs":2,"ttftMs":120,"prefillTokensPerSecond":4000,"decodeTokensPerSecond":55,"totalMs":4800}`,
		`{"type":"request.finished","at":%d,"model":"` + m + `","requestId":"r3","finish":"cancelled","promptTokens":88,"cachedPromptTokens":0,"completionTokens":0,"queueMs":null,"ttftMs":null,"prefillTokensPerSecond":null,"decodeTokensPerSecond":null,"totalMs":30}`,
		`{"type":"job.state","at":%d,"jobId":"j1","kind":"bench-serve","status":"running"}`,
	}
	var b strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&b, l+"\n", base+int64(i)*100)
	}
	return b.String()
}

// checkAnchorValues asserts what the original module's reducer makes of
// hostSession: the values other host code reads.
func checkAnchorValues(t *testing.T, s snapshot.Snapshot) {
	t.Helper()
	if len(s.Models) != 1 || len(s.Caches) != 1 || len(s.Schedulers) != 1 {
		t.Fatalf("models %d, caches %d, schedulers %d; want 1 each", len(s.Models), len(s.Caches), len(s.Schedulers))
	}
	m, c, w := s.Models[0], s.Caches[0], s.Requests.Window
	for _, ck := range []struct {
		name      string
		got, want any
	}{
		{"state", m.State, snapshot.StateResident},
		{"loads", m.Loads, int64(1)},
		{"lastLoadMs", *m.LastLoadMs, 2400.0},
		{"lastUnloadReason", m.LastUnloadReason, (*string)(nil)},
		{"lastError", m.LastError, (*string)(nil)},
		{"weights", m.WeightsBytes, int64(2263000000)},
		{"kv", m.KVBytes, int64(1000)},
		{"kv cache", *c.KV.CapacityBytes, int64(4000)},
		{"prefix hits", c.Prefix.Hits, int64(768)},
		{"prefix hit rate", *c.Prefix.HitRate, 768.0 / 2505},
		{"prefix capacity", c.Prefix.CapacityBytes, (*int64)(nil)},
		{"scheduler", s.Schedulers[0].TokensPerSecond, 120.5},
		{"finished", s.Requests.Finished, int64(3)},
		{"byFinish", fmt.Sprint(s.Requests.ByFinish), "map[cancelled:1 error:0 length:1 stop:1]"},
		{"window", w.Count, 3},
		{"ttft p50 (nearest rank of 2)", w.TTFTMs.P50, 88.1},
		{"ttft count (null skipped)", w.TTFTMs.Count, 2},
		{"queue count", w.QueueMs.Count, 1},
		{"total max", w.TotalMs.Max, 4800.0},
		{"cached share", *w.CachedPromptShare, 768.0 / 1000},
		{"recent newest last", s.Requests.Recent[2].RequestID, "r3"},
		{"series", len(s.Series), 1},
		{"series tps", s.Series[0].TokensPerSecond, 120.5},
	} {
		if fmt.Sprint(ck.got) != fmt.Sprint(ck.want) {
			t.Errorf("%s = %v, want %v", ck.name, ck.got, ck.want)
		}
	}
}

// The host's flat events give the anchor's snapshot values through every
// way in: serve --replay, POST /events, --events-url as SSE and as NDJSON,
// and mlx-metrics events replay.
func TestHostFlatEventsThroughEveryPath(t *testing.T) {
	base := time.Now().Add(-10 * time.Minute).UnixMilli()
	session := hostSession(base)
	file := filepath.Join(t.TempDir(), "host.ndjson")
	if err := os.WriteFile(file, []byte(session), 0o644); err != nil {
		t.Fatal(err)
	}
	host := func(contentType string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", contentType)
			for i, line := range strings.Split(strings.TrimSpace(session), "\n") {
				if contentType == "text/event-stream" {
					fmt.Fprintf(w, "id: %d\ndata: %s\n\n", i+1, line)
				} else {
					fmt.Fprintln(w, line)
				}
			}
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}))
	}
	sse, ndjson := host("text/event-stream"), host("application/x-ndjson")
	defer sse.Close()
	defer ndjson.Close()

	for _, tc := range []struct {
		name string
		args []string
		feed func(t *testing.T, url string)
	}{
		{name: "serve --replay", args: []string{"-replay", file}},
		{name: "--events-url SSE", args: []string{"-events-url", sse.URL}},
		{name: "--events-url NDJSON", args: []string{"-events-url", ndjson.URL}},
		{name: "POST /events", feed: func(t *testing.T, url string) {
			resp, err := http.Post(url+"/api/metrics/events", "application/x-ndjson", strings.NewReader(session))
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("post: %v %v", resp, err)
			}
			resp.Body.Close()
		}},
		{name: "events replay", feed: func(t *testing.T, url string) {
			env, _, errOut := testEnv()
			if err := eventsCmd(context.Background(), []string{"replay", "--server", url, file}, env); err != nil {
				t.Fatalf("events replay: %v: %s", err, errOut)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			var cfg app.LiveConfig
			addLiveFlags(fs, &envDefaults{}, &cfg)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			l := startLive(t, cfg)
			if tc.feed != nil {
				tc.feed(t, l.url)
			}
			checkAnchorValues(t, l.reduced(t, 3))
		})
	}
}

// liveOnLoopback is the live half serving on a loopback port.
type liveOnLoopback struct {
	url string
	bus *bus.Bus
	*app.Live
}

func startLive(t *testing.T, cfg app.LiveConfig) liveOnLoopback {
	t.Helper()
	b := bus.New()
	s, err := app.StartLive(context.Background(), b, health.New(time.Now(), health.Options{}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	srv := server.New(server.Options{}, routesOf(s)...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Listener(ln) }()
	t.Cleanup(func() { srv.Shutdown() })
	return liveOnLoopback{url: "http://" + ln.Addr().String(), bus: b, Live: s}
}

// reduced waits until n requests are reduced and returns the snapshot:
// what was accepted (or read by a source on its own goroutine) is handed
// on by the bus asynchronously.
func (l liveOnLoopback) reduced(t *testing.T, n int64) snapshot.Snapshot {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		l.bus.Flush()
		snap := l.Snapshot(time.Now())
		if snap.Requests.Finished >= n {
			return snap
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d requests reduced within 10 s, want %d", snap.Requests.Finished, n)
		}
		time.Sleep(5 * time.Millisecond) // polls a condition; it is not the synchronisation
	}
}

// The client commands' happy path end to end against the live half itself
// on a loopback port: the host's session replayed by `events replay`, then
// read back by `snapshot` (table and JSON). The fixed snapshot of
// TestClientCommands stays for what events cannot give (a scraped ratio).
func TestSnapshotOfReplayedEvents(t *testing.T) {
	file := filepath.Join(t.TempDir(), "host.ndjson")
	if err := os.WriteFile(file, []byte(hostSession(time.Now().Add(-10*time.Minute).UnixMilli())), 0o644); err != nil {
		t.Fatal(err)
	}
	l := startLive(t, app.LiveConfig{Window: 200, Recent: 10, Series: 100})
	url := l.url

	env, out, errOut := testEnv()
	if err := eventsCmd(context.Background(), []string{"replay", "--server", url, file}, env); err != nil {
		t.Fatalf("events replay: %v: %s", err, errOut)
	}
	// catalog.changed and job.state are not the live view's: ignored.
	if want := "replayed 11 events: 9 accepted, 2 ignored, 0 rejected"; !strings.Contains(out.String(), want) {
		t.Errorf("replay said %q, want %q", out.String(), want)
	}
	l.reduced(t, 3)
	for _, tc := range []struct {
		args     []string
		contains []string
	}{
		{[]string{"--server", url}, []string{
			"mlx-community/Qwen3-4B-4bit resident 1 2.40 s 2.11 GiB",
			"120.5", "30.7%", // tokens/s; the prefix cache's hit rate, 768 of 2,505
			"3 finished, stop 1, length 1, cancelled 1",
			"ttft 88.1 120.0 120.0 120.0 104.0"}},
		{[]string{"--server", url, "--json"}, []string{`"model":"mlx-community/Qwen3-4B-4bit"`, `"finished":3`}},
	} {
		env, out, _ := testEnv()
		if err := snapshotCmd(context.Background(), tc.args, env); err != nil {
			t.Fatalf("snapshot %v: %v", tc.args, err)
		}
		words := strings.Join(strings.Fields(out.String()), " ")
		for _, want := range tc.contains {
			if !strings.Contains(words, want) {
				t.Errorf("snapshot %v lacks %q:\n%s", tc.args, want, out.String())
			}
		}
	}
}
