// Command soak puts a locally started `mlx-metrics serve` through a bad
// day, all at once and bounded in time, on loopback only:
//
//   - stream clients that connect and never read (with frames made large
//     by many models), which must cost the server about one frame each:
//     /healthz's stream.maxClientBytes, the most one client holds unsent,
//     must stay within two frames (the one in its write and the newest);
//   - clients that dribble a request header a line at a time, which the
//     server must cut off within its header timeout;
//   - gzip, deflate and br bodies that inflate to a gigabyte, which must
//     be refused (413) without the server inflating them (its peak RSS
//     stays under the bound);
//   - a steady posting load of valid events, every one of which must be
//     in the snapshot afterwards;
//   - kill -9 of the server during a bench-serve run and a restart on the
//     same home, after which the GPU lease must be free, the run must not
//     be left running, the record its runner left must be in GET /history,
//     and a new run must start.
//
// It prints the server's peak RSS, what was refused, and what was lost,
// and exits 1 when a bound is broken (2 on a usage or set-up error).
// Usage: scripts/soak [flags] (it builds the binary), or from
// scripts/soakload go run . -bin /path/to/mlx-metrics [flags].
package main

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/prometheus/procfs"
)

type config struct {
	bin        string
	duration   time.Duration
	readers    int
	dribblers  int
	bombs      int
	models     int
	postEvery  time.Duration
	maxRSSMB   int
	headerWait time.Duration // the longest a dribbler may be kept
	skipKill   bool
	bodies     string // the bodies probe's counts (bodies.go); empty: the bad day
}

func main() {
	var c config
	flag.StringVar(&c.bin, "bin", "", "the mlx-metrics binary (required)")
	flag.DurationVar(&c.duration, "duration", 60*time.Second, "how long the load runs before the kill -9 phase")
	flag.IntVar(&c.readers, "readers", 200, "stream clients that never read")
	flag.IntVar(&c.dribblers, "dribblers", 200, "clients dribbling a request header")
	flag.IntVar(&c.bombs, "bombs", 21, "compressed bodies that inflate to 1 GiB each, gzip, deflate and br in turn")
	flag.IntVar(&c.models, "models", 400, "models posted, to make each stream frame large")
	flag.DurationVar(&c.postEvery, "post-every", 50*time.Millisecond, "pace of the posting load")
	flag.IntVar(&c.maxRSSMB, "max-rss-mb", 768, "the server's peak RSS bound")
	flag.DurationVar(&c.headerWait, "header-wait", 30*time.Second, "the longest the server may keep a dribbler")
	flag.BoolVar(&c.skipKill, "skip-kill", false, "leave out the kill -9 of a bench run")
	flag.StringVar(&c.bodies, "bodies", "", "instead of the bad day, the bodies probe: for each `N` of a comma-separated list, N event bodies of 32 MiB at once, then N connections declaring 32 MiB (-max-rss-mb bounds both)")
	flag.Parse()
	if c.bin == "" {
		fmt.Fprintln(os.Stderr, "soak: -bin is required")
		os.Exit(2)
	}
	if c.bodies != "" {
		counts, err := parseCounts(c.bodies)
		if err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			os.Exit(2)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		ok, err := runBodies(ctx, c.bin, counts, c.maxRSSMB)
		if err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			os.Exit(2)
		}
		if !ok {
			fmt.Println("BROKEN: a peak RSS over -max-rss-mb, or an accepted event not in the snapshot")
			os.Exit(1)
		}
		fmt.Println("every bound held")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.duration+5*time.Minute)
	defer cancel()
	r, err := run(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	r.print(os.Stdout)
	if len(r.broken) > 0 {
		os.Exit(1)
	}
}

// report is what the soak saw.
type report struct {
	peakRSSMB       float64
	frameBytes      int // the largest snapshot seen during the load
	maxClientBytes  int // /healthz: the most one stream client held unsent
	readersHeld     int
	dribblersCut    int
	dribblersLonger int
	longestDribble  time.Duration
	bombsRefused    map[string]int // "<encoding> <status>" (status 0: no answer)
	posted, seen    int64
	postFailures    int64
	health          map[string]any
	recovery        string
	broken          []string
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "peak server RSS        %.0f MB (stream frame %d bytes)\n", r.peakRSSMB, r.frameBytes)
	fmt.Fprintf(w, "non-reading streams    %d connected, at most %d bytes unsent for one (2 frames: %d)\n", r.readersHeld, r.maxClientBytes, 2*r.frameBytes)
	fmt.Fprintf(w, "header dribblers       %d cut off, longest kept %s, %d kept too long\n", r.dribblersCut, r.longestDribble.Round(time.Second), r.dribblersLonger)
	fmt.Fprintf(w, "compressed bombs       %v (encoding status: count)\n", r.bombsRefused)
	fmt.Fprintf(w, "posted requests        %d accepted, %d in the snapshot, %d posts failed\n", r.posted, r.seen, r.postFailures)
	if refusals, ok := r.health["refused"]; ok {
		b, _ := json.Marshal(refusals)
		fmt.Fprintf(w, "refusals (/healthz)    %s\n", b)
	}
	if st, ok := r.health["stream"]; ok {
		b, _ := json.Marshal(st)
		fmt.Fprintf(w, "stream (/healthz)      %s\n", b)
	}
	fmt.Fprintf(w, "kill -9 during a run   %s\n", r.recovery)
	if len(r.broken) == 0 {
		fmt.Fprintln(w, "every bound held")
		return
	}
	for _, b := range r.broken {
		fmt.Fprintln(w, "BROKEN:", b)
	}
}

func (r *report) breaks(format string, args ...any) {
	r.broken = append(r.broken, fmt.Sprintf(format, args...))
}

// server is one running `mlx-metrics serve`.
type server struct {
	cmd  *exec.Cmd
	addr string
	home string
	log  *bytes.Buffer
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func start(ctx context.Context, bin, addr, home string) (*server, error) {
	s := &server{addr: addr, home: home, log: &bytes.Buffer{}}
	s.cmd = exec.CommandContext(ctx, bin, "serve", "--addr", addr, "--home", home)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if res, err := http.Get(s.url("/healthz")); err == nil {
			res.Body.Close()
			return s, nil
		}
		if time.Now().After(deadline) {
			s.kill()
			return nil, fmt.Errorf("the server did not come up on %s:\n%s", addr, s.log)
		}
		time.Sleep(100 * time.Millisecond) // waiting for a process to listen
	}
}

// startFresh starts a server on a free loopback port and a new home.
func startFresh(ctx context.Context, bin string) (*server, error) {
	home, err := os.MkdirTemp("", "mlx-metrics-soak-")
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err == nil {
		var s *server
		if s, err = start(ctx, bin, addr, home); err == nil {
			return s, nil
		}
	}
	os.RemoveAll(home)
	return nil, err
}

// remove kills the server and removes its home.
func (s *server) remove() {
	s.kill()
	os.RemoveAll(s.home)
}

func (s *server) url(path string) string { return "http://" + s.addr + "/api/metrics" + path }

// kill is kill -9 of the server alone (its runner child lives on, as it
// would after a crash).
func (s *server) kill() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		_ = s.cmd.Wait()
	}
}

// rss is the server's resident set in MB (VmRSS, procfs).
func (s *server) rss() float64 {
	p, err := procfs.NewProc(s.cmd.Process.Pid)
	if err != nil {
		return 0
	}
	st, err := p.NewStatus()
	if err != nil {
		return 0
	}
	return float64(st.VmRSS) / (1 << 20)
}

func post(s *server, body string) (int, error) {
	res, err := http.Post(s.url("/events"), "application/x-ndjson", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, nil
}

func getJSON(s *server, path string, out any) error {
	res, err := http.Get(s.url(path))
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return fmt.Errorf("GET %s: %s %s", path, res.Status, b)
	}
	return json.NewDecoder(res.Body).Decode(out)
}

func run(ctx context.Context, c config) (*report, error) {
	r := &report{bombsRefused: map[string]int{}}
	s, err := startFresh(ctx, c.bin)
	if err != nil {
		return nil, err
	}
	defer func() { s.remove() }() // s is replaced by the restart after the kill

	// Many models make every stream frame large.
	now := time.Now().UnixMilli()
	var models strings.Builder
	for i := range c.models {
		fmt.Fprintf(&models, `{"type":"model.load","at":%d,"model":"org/soak-model-%04d-with-a-long-name","phase":"finished","ms":1000,"weightsBytes":4000000000}`+"\n", now, i)
	}
	if code, err := post(s, models.String()); err != nil || code != 200 {
		return nil, fmt.Errorf("posting the models: %d %v", code, err)
	}
	frame, err := snapshotSize(s)
	if err != nil {
		return nil, err
	}
	var maxFrame atomic.Int64 // the posting load grows the frame a little
	maxFrame.Store(int64(frame))

	loadCtx, stopLoad := context.WithTimeout(ctx, c.duration)
	defer stopLoad()
	var wg sync.WaitGroup
	var peak atomic.Uint64
	wg.Go(func() { // RSS and frame size sampler
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 0; loadCtx.Err() == nil; i++ {
			if mb := s.rss(); uint64(mb) > peak.Load() {
				peak.Store(uint64(mb))
			}
			if i%10 == 0 {
				if n, err := snapshotSize(s); err == nil && int64(n) > maxFrame.Load() {
					maxFrame.Store(int64(n))
				}
			}
			select {
			case <-t.C:
			case <-loadCtx.Done():
			}
		}
	})
	var readers []net.Conn
	var rmu sync.Mutex
	wg.Go(func() { // non-reading stream clients
		for range c.readers {
			conn, err := net.Dial("tcp", s.addr)
			if err != nil {
				continue
			}
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(4096)
			}
			fmt.Fprintf(conn, "GET /api/metrics/stream HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", s.addr)
			rmu.Lock()
			readers = append(readers, conn)
			rmu.Unlock()
		}
	})
	var dmu sync.Mutex
	wg.Go(func() { // header dribblers
		var dw sync.WaitGroup
		for range c.dribblers {
			dw.Go(func() {
				held, cut := dribble(loadCtx, s.addr, c.headerWait+10*time.Second)
				dmu.Lock()
				defer dmu.Unlock()
				if cut {
					r.dribblersCut++
				}
				if held > r.longestDribble {
					r.longestDribble = held
				}
				if held > c.headerWait {
					r.dribblersLonger++
				}
			})
		}
		dw.Wait()
	})
	encodings := []string{"gzip", "deflate", "br"}
	bombs := map[string][]byte{}
	for _, enc := range encodings {
		bombs[enc] = compressedBomb(enc, 1<<30)
	}
	wg.Go(func() { // compressed bombs
		for i := range c.bombs {
			if loadCtx.Err() != nil {
				return
			}
			enc := encodings[i%len(encodings)]
			req, _ := http.NewRequestWithContext(loadCtx, "POST", s.url("/events"), bytes.NewReader(bombs[enc]))
			req.Header.Set("Content-Type", "application/x-ndjson")
			req.Header.Set("Content-Encoding", enc)
			status := 0
			if res, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				status = res.StatusCode
			}
			r.bombsRefused[fmt.Sprintf("%s %d", enc, status)]++
		}
	})
	wg.Go(func() { // posting load: one request each, all must be counted
		t := time.NewTicker(c.postEvery)
		defer t.Stop()
		for i := 0; loadCtx.Err() == nil; i++ {
			at := time.Now().UnixMilli()
			line := fmt.Sprintf(`{"type":"request.finished","at":%d,"model":"org/soak-model-0000-with-a-long-name","requestId":"soak-%d","finish":"stop","promptTokens":100,"cachedPromptTokens":0,"completionTokens":10,"queueMs":1,"ttftMs":50,"prefillTokensPerSecond":2000,"decodeTokensPerSecond":40,"totalMs":300}`, at, i)
			if code, err := post(s, line); err == nil && code == 200 {
				atomic.AddInt64(&r.posted, 1)
			} else {
				atomic.AddInt64(&r.postFailures, 1)
			}
			select {
			case <-t.C:
			case <-loadCtx.Done():
			}
		}
	})
	wg.Wait()
	r.peakRSSMB = float64(peak.Load())
	r.readersHeld = len(readers)

	var snap struct {
		Requests struct{ Finished int64 } `json:"requests"`
	}
	if err := getJSON(s, "/snapshot", &snap); err != nil {
		r.breaks("the snapshot after the load: %v", err)
	}
	r.seen = snap.Requests.Finished
	var health map[string]any
	if res, err := http.Get("http://" + s.addr + "/healthz"); err == nil {
		_ = json.NewDecoder(res.Body).Decode(&health)
		res.Body.Close()
	}
	r.health = health
	r.frameBytes = int(maxFrame.Load())
	if st, ok := health["stream"].(map[string]any); ok {
		if n, ok := st["maxClientBytes"].(float64); ok {
			r.maxClientBytes = int(n)
		}
	}
	for _, conn := range readers {
		conn.Close()
	}

	if r.peakRSSMB > float64(c.maxRSSMB) {
		r.breaks("peak RSS %.0f MB over %d MB", r.peakRSSMB, c.maxRSSMB)
	}
	if r.dribblersLonger > 0 {
		r.breaks("%d header dribblers kept over %s", r.dribblersLonger, c.headerWait)
	}
	// A client holds at most the frame it is writing and the newest; the
	// stream's event lines and a stamp's digits add a little to each.
	if bound := 2*r.frameBytes + 4<<10; r.maxClientBytes > bound {
		r.breaks("a non-reading stream client held %d bytes unsent, over two frames (%d)", r.maxClientBytes, bound)
	}
	if r.health["stream"] == nil {
		r.breaks("/healthz has no stream section to read maxClientBytes from")
	}
	for key, n := range r.bombsRefused {
		if !strings.HasSuffix(key, " 413") {
			r.breaks("%d compressed bombs answered %s, want 413", n, key)
		}
	}
	if r.seen != r.posted || r.postFailures > 0 {
		r.breaks("%d requests accepted, %d in the snapshot, %d posts failed", r.posted, r.seen, r.postFailures)
	}
	if !c.skipKill {
		r.recovery = killDuringRun(ctx, c, s, r)
	} else {
		r.recovery = "skipped"
	}
	return r, nil
}

func snapshotSize(s *server) (int, error) {
	res, err := http.Get(s.url("/snapshot"))
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return len(b), err
}

// dribble sends a request header one line every 2 s and reports how long
// the server kept the connection and whether it cut it off (rather than
// the soak giving up after limit).
func dribble(ctx context.Context, addr string, limit time.Duration) (held time.Duration, cut bool) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, true
	}
	defer conn.Close()
	start := time.Now()
	closed := make(chan struct{})
	go func() { // the server closing shows as a read ending
		_, _ = io.Copy(io.Discard, conn)
		close(closed)
	}()
	fmt.Fprintf(conn, "POST /api/metrics/events HTTP/1.1\r\nHost: %s\r\n", addr)
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-closed:
			return time.Since(start), true
		case <-ctx.Done():
			// The load ended; wait the rest of the limit for the cut.
		case <-t.C:
			if _, err := fmt.Fprintf(conn, "X-Dribble-%d: %d\r\n", i, i); err != nil {
				return time.Since(start), true
			}
			continue
		}
		select {
		case <-closed:
			return time.Since(start), true
		case <-time.After(limit - time.Since(start)):
			return time.Since(start), false
		}
	}
}

// compressedBomb is a body of n zero bytes in encoding enc (gzip and
// deflate about n/1000 compressed, br far less).
func compressedBomb(enc string, n int) []byte {
	var buf bytes.Buffer
	var zw io.WriteCloser
	switch enc {
	case "gzip":
		zw, _ = gzip.NewWriterLevel(&buf, gzip.BestCompression)
	case "deflate":
		zw, _ = zlib.NewWriterLevel(&buf, zlib.BestCompression)
	case "br":
		zw = brotli.NewWriterLevel(&buf, brotli.BestSpeed)
	}
	zero := make([]byte, 1<<20)
	for written := 0; written < n; written += len(zero) {
		zw.Write(zero)
	}
	zw.Close()
	return buf.Bytes()
}

// killDuringRun starts a smoke run, kill -9s the server while it runs,
// restarts it on the same home, and checks the run was recovered: not left
// running, the lease free, and a new run accepted.
func killDuringRun(ctx context.Context, c config, s *server, r *report) string {
	type job struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	var started job
	res, err := http.Post(s.url("/bench"), "application/json", strings.NewReader(`{"profile":"smoke"}`))
	if err != nil {
		r.breaks("starting a run: %v", err)
		return "could not start a run"
	}
	json.NewDecoder(res.Body).Decode(&started)
	res.Body.Close()
	if res.StatusCode/100 != 2 || started.ID == "" {
		r.breaks("starting a run: %s", res.Status)
		return "could not start a run: " + res.Status
	}
	if !waitFor(30*time.Second, func() bool {
		var j job
		return getJSON(s, "/bench/"+started.ID, &j) == nil && j.Status == "running"
	}) {
		r.breaks("run %s never ran", started.ID)
		return "the run never ran"
	}
	time.Sleep(2 * time.Second) // let it get into a measurement
	s.kill()
	s2, err := start(ctx, c.bin, s.addr, s.home)
	if err != nil {
		r.breaks("restart after kill -9: %v", err)
		return "no restart"
	}
	*s = *s2
	var after job
	if !waitFor(60*time.Second, func() bool {
		return getJSON(s, "/bench/"+started.ID, &after) == nil && after.Status != "running" && after.Status != "queued"
	}) {
		r.breaks("run %s still %q a minute after the restart", started.ID, after.Status)
		return "the killed run stayed " + after.Status
	}
	var lease struct {
		Lease struct{ Held bool } `json:"lease"`
	}
	if err := getJSON(s, "/bench", &lease); err != nil || lease.Lease.Held {
		r.breaks("the lease after recovery: held=%v err=%v", lease.Lease.Held, err)
	}
	// The runner outlived the kill (or had its SIGTERM from the kernel):
	// whatever record it wrote is kept in history by the restarted server.
	kept := "not in history"
	var entry struct {
		ID string `json:"id"`
	}
	if waitFor(30*time.Second, func() bool { return getJSON(s, "/history/"+started.ID, &entry) == nil }) && entry.ID == started.ID {
		kept = "in history"
	} else {
		r.breaks("run %s is not in GET /history after the restart", started.ID)
	}
	res, err = http.Post(s.url("/bench"), "application/json", strings.NewReader(`{"profile":"smoke"}`))
	if err != nil || res.StatusCode/100 != 2 {
		status := "no answer"
		if res != nil {
			status = res.Status
			res.Body.Close()
		}
		r.breaks("a new run after recovery: %s %v", status, err)
		return fmt.Sprintf("recovered as %s (%s), but a new run was refused", after.Status, kept)
	}
	res.Body.Close()
	runs, _ := filepath.Glob(filepath.Join(s.home, "metrics", "bench", "runs", started.ID, "run.json"))
	return fmt.Sprintf("run %s recovered as %s (run.json kept: %v, %s); a new run accepted", started.ID, after.Status, len(runs) == 1, kept)
}

func waitFor(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond) // polling a server
	}
	return true
}
