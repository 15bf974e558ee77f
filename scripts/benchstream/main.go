// Command benchstream measures the live stream's fan-out against a
// locally started `mlx-metrics serve`: it connects N stream clients, posts
// a batch of events every -every with one probe sample in it, and times,
// for every client, the lag from the probe's POST to the frame carrying
// it. It prints the lag's p50/p99, the server's CPU and its RSS.
//
// The probes come more than twice the stream's 500 ms throttle apart (a
// post's tail goes out in a second frame), so each probe is a leading
// edge and goes out at once: the lag is the
// server's reduce-and-fan-out time plus the clients' own scheduling, with
// no throttle wait in it. The clients run in this process, on the same
// cores as the server: on a small machine they compete with it, which the
// figures include.
//
// Loopback only, bounded by -duration (and -timeout for everything).
// Usage: scripts/bench-stream [flags] (it builds the binary), or
// go run . -bin /path/to/mlx-metrics [flags] from this directory.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/procfs"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/sse"
)

const probeModel = "bench-probe"

type config struct {
	bin        string
	clients    int
	slow       int
	duration   time.Duration
	every      time.Duration
	batch      int
	models     int
	form       string
	token      string
	serverArgs []string
	timeout    time.Duration
	verbose    bool

	e2e       bool
	postEvery time.Duration
	sweep     string
	rounds    int
	role      string
	addr      string
}

func main() {
	var cfg config
	flag.StringVar(&cfg.bin, "bin", "", "the mlx-metrics binary (required)")
	flag.IntVar(&cfg.clients, "clients", 1000, "stream clients that read")
	flag.IntVar(&cfg.slow, "slow", 0, "stream clients that connect and never read (4 KiB receive buffer)")
	flag.DurationVar(&cfg.duration, "duration", 20*time.Second, "how long to post and measure")
	flag.DurationVar(&cfg.every, "every", 1200*time.Millisecond, "gap between two posts (over twice the stream's 500 ms throttle: a post's batch ends in a second frame)")
	flag.IntVar(&cfg.batch, "batch", 50, "events per post besides the probe (the posting load)")
	flag.IntVar(&cfg.models, "models", 8, "models in the snapshot, which sets the frame size")
	flag.StringVar(&cfg.form, "form", "auto", "event form: flat, envelope, or auto (flat, else envelope)")
	flag.StringVar(&cfg.token, "token", "", "bearer token for POST /events, if the server needs one")
	serverArg := flag.String("server-args", "", "extra arguments for mlx-metrics serve, space-separated")
	flag.DurationVar(&cfg.timeout, "timeout", 3*time.Minute, "bound on the whole run")
	flag.BoolVar(&cfg.verbose, "v", false, "print each probe's slowest lag")
	e2eFlags(&cfg)
	flag.Parse()
	if cfg.role == "clients" {
		if err := clientsMain(cfg.addr, cfg.clients); err != nil {
			fmt.Fprintln(os.Stderr, "bench-stream clients:", err)
			os.Exit(1)
		}
		return
	}
	if cfg.bin == "" || cfg.clients < 1 || cfg.every <= 0 || cfg.postEvery <= 0 || cfg.duration <= 0 {
		flag.Usage()
		os.Exit(2)
	}
	cfg.serverArgs = strings.Fields(*serverArg)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	runner := run
	if cfg.e2e {
		runner = runE2E
	}
	if cfg.sweep != "" {
		counts, err := parseCounts(cfg.sweep)
		if err != nil || !cfg.e2e || cfg.rounds < 1 {
			fmt.Fprintln(os.Stderr, "bench-stream: -sweep needs -e2e, client counts like 10,500,1000 and -rounds of 1 or more")
			os.Exit(2)
		}
		runner = func(ctx context.Context, cfg config) error { return sweepE2E(ctx, cfg, counts, cfg.rounds) }
	}
	if err := runner(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench-stream:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config) error {
	srv, err := startServer(ctx, cfg)
	if err != nil {
		return err
	}
	defer srv.stop()
	p := &poster{base: srv.base, token: cfg.token, form: cfg.form, sent: map[int64]time.Time{}}
	if err := p.fill(cfg.models); err != nil {
		return err
	}
	idle := srv.usage()

	// Connect, a few at a time so the listen backlog never overflows.
	clients := make([]*client, cfg.clients)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	errc := make(chan error, 1)
	for i := range clients {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := dial(srv.addr, p)
			if err != nil {
				select {
				case errc <- err:
				default:
				}
				return
			}
			clients[i] = c
		}()
	}
	wg.Wait()
	select {
	case err := <-errc:
		return fmt.Errorf("connecting the clients: %w", err)
	default:
	}
	for range cfg.slow {
		conn, err := dialSlow(srv.addr)
		if err != nil {
			return fmt.Errorf("connecting the slow clients: %w", err)
		}
		defer conn.Close()
	}
	for _, c := range clients {
		go c.read()
	}
	// A client's opening frame counts against its two frames a second:
	// let every client's next frame be due before the first probe.
	time.Sleep(time.Second)
	connected := srv.usage()

	// Post and measure.
	var rss rssPeak
	stopSampling := rss.sample(srv.pid)
	start := srv.usage()
	deadline := time.Now().Add(cfg.duration)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if err := p.post(cfg.batch, cfg.models); err != nil {
			return err
		}
		time.Sleep(cfg.every)
	}
	time.Sleep(cfg.every) // the last probe's frames
	end := srv.usage()
	stopSampling()

	var lags []time.Duration
	var frames, probesSeen, failed int
	var frameBytes int
	worst := map[int64]time.Duration{}
	for _, c := range clients {
		c.mu.Lock()
		for i, at := range c.lagAt {
			worst[at] = max(worst[at], c.lags[i])
		}
		lags = append(lags, c.lags...)
		frames += c.frames
		probesSeen += len(c.lags)
		frameBytes = max(frameBytes, c.frameBytes)
		if c.err != nil && !errors.Is(c.err, net.ErrClosed) {
			failed++
		}
		c.mu.Unlock()
		c.conn.Close()
	}
	probes := p.probes
	slices.Sort(lags)
	if cfg.verbose {
		for _, at := range slices.Sorted(maps.Keys(worst)) {
			fmt.Printf("probe at %d: slowest client %.1f ms\n", at, ms(worst[at]))
		}
	}
	cpu := end.cpu - start.cpu
	wall := end.at.Sub(start.at)

	fmt.Printf("clients %d (+%d not reading), %d models, frame %.1f KiB, %d posts of %d events every %v over %v\n",
		cfg.clients, cfg.slow, cfg.models+1, float64(frameBytes)/1024, probes, cfg.batch+1, cfg.every, wall.Round(time.Millisecond))
	fmt.Printf("probe frames received %d of %d (%d clients failed); frames in all %d\n", probesSeen, probes*cfg.clients, failed, frames)
	if len(lags) > 0 {
		fmt.Printf("lag post->client  p50 %.1f ms  p99 %.1f ms  max %.1f ms\n", ms(pct(lags, 0.50)), ms(pct(lags, 0.99)), ms(lags[len(lags)-1]))
	}
	// Frames written while measuring: all but each client's opening one.
	fmt.Printf("server CPU        %.3f cores (%.1f µs per client-frame, reducing the posts included)\n", cpu.Seconds()/wall.Seconds(), perFrame(cpu, frames-cfg.clients))
	fmt.Printf("server RSS        idle %.1f MiB, with clients %.1f MiB (%.1f KiB per client), peak %.1f MiB\n",
		mib(idle.rss), mib(connected.rss), float64(connected.rss-idle.rss)/1024/float64(cfg.clients+cfg.slow), mib(max(rss.peak.Load(), end.rss)))
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func mib(b int64) float64        { return float64(b) / (1 << 20) }

// pct is the q-quantile (0..1) of sorted by the project's one percentile
// rule (bench.Percentile), as the product's figures are.
func pct(sorted []time.Duration, q float64) time.Duration {
	return time.Duration(bench.Percentile(sorted, 100*q))
}

func perFrame(cpu time.Duration, frames int) float64 {
	if frames == 0 {
		return 0
	}
	return float64(cpu) / float64(time.Microsecond) / float64(frames)
}

// server is the mlx-metrics process under test.
type server struct {
	cmd  *exec.Cmd
	pid  int
	addr string
	base string
	home string
	log  *os.File
}

func startServer(ctx context.Context, cfg config) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	home, err := os.MkdirTemp("", "bench-stream-*")
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(home, "serve.log"))
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--addr", addr, "--home", home}, cfg.serverArgs...)
	cmd := exec.CommandContext(ctx, cfg.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, pid: cmd.Process.Pid, addr: addr, base: "http://" + addr + "/api/metrics", home: home, log: logf}
	for i := 0; ; i++ {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s, nil
			}
		}
		if i == 200 || ctx.Err() != nil {
			s.stop()
			out, _ := os.ReadFile(logf.Name())
			return nil, fmt.Errorf("the server did not come up: %v\n%s", err, tail(out))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		fmt.Fprintln(os.Stderr, "bench-stream: the server did not stop within 10 s of SIGTERM; killing it")
		_ = s.cmd.Process.Kill()
		<-done
	}
	s.log.Close()
	_ = os.RemoveAll(s.home)
}

func tail(b []byte) []byte {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return b
}

// usage is a reading of the server's CPU time and resident memory.
type usage struct {
	at  time.Time
	cpu time.Duration
	rss int64
}

func (s *server) usage() usage {
	return usage{at: time.Now(), cpu: cpuTime(s.pid), rss: rssBytes(s.pid)}
}

// cpuTime is the process's user and system CPU time so far (procfs).
func cpuTime(pid int) time.Duration {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0
	}
	st, err := p.Stat()
	if err != nil {
		return 0
	}
	return time.Duration(st.CPUTime() * float64(time.Second))
}

// rssBytes is the process's resident set (VmRSS, procfs).
func rssBytes(pid int) int64 {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0
	}
	st, err := p.NewStatus()
	if err != nil {
		return 0
	}
	return int64(st.VmRSS)
}

type rssPeak struct{ peak atomic.Int64 }

func (r *rssPeak) sample(pid int) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if v := rssBytes(pid); v > r.peak.Load() {
				r.peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done) }
}

// poster posts the events: filler models once, then batches with a probe.
type poster struct {
	base, token, form string

	mu     sync.Mutex
	sent   map[int64]time.Time // probe "at" -> when its POST began
	lastAt int64
	probes int
}

func (p *poster) event(typ string, at int64, fields string) string {
	if p.form == "envelope" {
		return fmt.Sprintf(`{"type":%q,"at":%d,"data":{%s}}`, typ, at, fields)
	}
	return fmt.Sprintf(`{"type":%q,"at":%d,%s}`, typ, at, fields)
}

func scheduler(model string, queued int) string {
	return fmt.Sprintf(`"model":%q,"active":1,"capacity":8,"queued":%d,"tokensPerSecond":100`, model, queued)
}

func request(model string, id int) string {
	return fmt.Sprintf(`"model":%q,"requestId":"r%d","finish":"stop","promptTokens":512,"cachedPromptTokens":0,"completionTokens":64,"queueMs":1,"ttftMs":40,"prefillTokensPerSecond":2000,"decodeTokensPerSecond":60,"totalMs":1100`, model, id)
}

// fill gives the snapshot its models, and settles the event form.
func (p *poster) fill(models int) error {
	forms := []string{p.form}
	if p.form == "auto" {
		forms = []string{"flat", "envelope"}
	}
	var err error
	for _, f := range forms {
		p.form = f
		var lines []string
		at := time.Now().UnixMilli()
		for i := range models {
			m := fmt.Sprintf("model-%d", i)
			lines = append(lines, p.event("scheduler.sample", at, scheduler(m, 0)), p.event("request.finished", at, request(m, i)))
		}
		lines = append(lines, p.event("scheduler.sample", at, scheduler(probeModel, 0)))
		if err = p.send(lines); err == nil {
			p.lastAt = at
			return nil
		}
	}
	return err
}

// post sends one batch: the probe, then the posting load. The probe
// comes first because the first event applied makes the leading-edge
// frame; the rest go out in the frame an Interval later.
func (p *poster) post(batch, models int) error {
	p.mu.Lock()
	at := max(time.Now().UnixMilli(), p.lastAt+1)
	p.lastAt = at
	p.probes++
	n := p.probes
	p.mu.Unlock()
	lines := make([]string, 0, batch+1)
	lines = append(lines, p.event("scheduler.sample", at, scheduler(probeModel, n)))
	for i := range batch {
		m := fmt.Sprintf("model-%d", i%max(models, 1))
		lines = append(lines, p.event("request.finished", at, request(m, n*batch+i)))
	}
	p.mu.Lock()
	p.sent[at] = time.Now()
	p.mu.Unlock()
	return p.send(lines)
}

func (p *poster) send(lines []string) error {
	req, err := http.NewRequest("POST", p.base+"/events", strings.NewReader(strings.Join(lines, "\n")+"\n"))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 2000))
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"rejected":0`)) {
		return fmt.Errorf("POST /events (%s form): %d %s", p.form, resp.StatusCode, body)
	}
	return nil
}

func (p *poster) sentAt(at int64) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.sent[at]
	return t, ok
}

// client is one reading stream client.
type client struct {
	conn net.Conn
	body io.Reader
	p    *poster

	mu         sync.Mutex
	lags       []time.Duration
	lagAt      []int64 // the probe of each lag
	frames     int
	frameBytes int
	lastProbe  int64
	err        error
}

func dial(addr string, p *poster) (*client, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/api/metrics/stream", nil)
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(conn, 4<<10)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if resp.StatusCode != 200 {
		conn.Close()
		return nil, fmt.Errorf("GET /stream: %d", resp.StatusCode)
	}
	return &client{conn: conn, body: resp.Body, p: p}, nil
}

// dialSlow opens a stream and never reads it.
func dialSlow(addr string) (net.Conn, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	_, err = fmt.Fprintf(conn, "GET /api/metrics/stream HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	return conn, err
}

var (
	schedulers = []byte(`"schedulers":[`)
	probeKey   = []byte(`{"model":"` + probeModel + `"`)
	atKey      = []byte(`"at":`)
)

// maxFrame bounds one frame a client reads.
const maxFrame = 64 << 20

// read reads frames until the connection closes, timing each new probe by
// when its frame began to be read.
func (c *client) read() {
	rd := sse.NewReader(c.body, sse.Options{BufferSize: 4 << 10, MaxBytes: maxFrame})
	for {
		ev, err := rd.Next()
		if err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			return
		}
		at := probeAt(ev.Data)
		c.mu.Lock()
		c.frames++
		c.frameBytes = max(c.frameBytes, len(ev.Data))
		if at > c.lastProbe {
			c.lastProbe = at
			if sent, ok := c.p.sentAt(at); ok {
				c.lags = append(c.lags, ev.At.Sub(sent))
				c.lagAt = append(c.lagAt, at)
			}
		}
		c.mu.Unlock()
	}
}

// probeAt finds the probe model's scheduler sample time in a snapshot.
func probeAt(data []byte) int64 {
	i := bytes.Index(data, schedulers)
	if i < 0 {
		return 0
	}
	data = data[i:]
	if i = bytes.Index(data, probeKey); i < 0 {
		return 0
	}
	data = data[i:]
	if i = bytes.Index(data, atKey); i < 0 {
		return 0
	}
	data = data[i+len(atKey):]
	end := bytes.IndexAny(data, ",}")
	if end < 0 {
		return 0
	}
	at, _ := strconv.ParseInt(string(data[:end]), 10, 64)
	return at
}
