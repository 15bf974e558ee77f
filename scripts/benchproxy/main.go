// Command benchproxy measures what `mlx-metrics serve --proxy-to` adds to
// streamed completions, across processes: it starts the reference engine
// (`mlx-metrics engine`) and `mlx-metrics serve --proxy-to` the engine,
// both on loopback ports, then for each stream count N runs N concurrent
// clients, each sending streamed completions back to back for -phase,
// once straight to the engine (direct) and once through the proxy
// (proxied). The two sides alternate within every round and the order
// flips from round to round, so drift in the machine's load (a shared
// machine) falls on both.
//
// It prints, per N, time to first token (to the first data line) p50/p99
// on each side and the proxy's addition (proxied minus direct), tokens/s
// received on each side and their ratio (per round, and pooled), the CPU
// the proxy (the serve process) used while proxying, and the machine.
// With -peer nginx, nginx is one more side, with -peer caddy Caddy is
// (-peer may be given more than once: every peer named runs in the same
// rounds); with -floor, two minimal Go relays are (floor.go): what the Go
// runtime alone costs for the same streams. With -sequential N the run is
// of single requests instead: N per side per round, one at a time, the
// sides in turn request by request, and it prints the added latency to the
// first token and to the end of the stream, median and p99, the form the
// LLM gateways publish their overhead in. The clients run in this process,
// on the same cores as the engine and the proxy: on a small machine all
// three compete, which the figures include.
//
// Loopback only, bounded by -timeout. Usage: scripts/bench-proxy [flags]
// (it builds the binary), or go run . -bin /path/to/mlx-metrics [flags]
// from this directory.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/procfs"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/sse"
)

type config struct {
	bin         string
	compareBin  string
	serveEnv    []string
	streams     []int
	rounds      int
	phase       time.Duration
	tokens      int
	promptWords int
	decodeRate  float64
	prefillRate float64
	timeout     time.Duration
	peers       []string
	floor       bool
	sequential  int
}

// peers are the reverse proxies -peer can run beside the proxy.
var peers = []string{"nginx", "caddy"}

func main() {
	if len(os.Args) > 1 && os.Args[1] == floorCmd {
		floorMain(os.Args[2:])
	}
	var cfg config
	flag.StringVar(&cfg.bin, "bin", "", "the mlx-metrics binary (required)")
	flag.StringVar(&cfg.compareBin, "compare-bin", "", "another mlx-metrics binary whose proxy runs as a third side, interleaved with the others (an older build, to compare)")
	serveEnv := flag.String("serve-env", "", "extra environment for the serve processes, space-separated KEY=VALUE (GOMAXPROCS=1, GOGC=400, ...)")
	streams := flag.String("streams", "1,64,256", "concurrent stream counts, comma-separated")
	flag.IntVar(&cfg.rounds, "rounds", 4, "rounds; each runs every stream count direct and proxied")
	flag.DurationVar(&cfg.phase, "phase", 2*time.Second, "how long one side of one stream count sends requests in a round")
	flag.IntVar(&cfg.tokens, "tokens", 64, "max_tokens of each completion")
	flag.IntVar(&cfg.promptWords, "prompt-words", 32, "words in each prompt")
	flag.Float64Var(&cfg.decodeRate, "decode-rate", 500, "the engine's decode rate per stream, tokens/s (batch slowdown 0, so every stream gets it); high values make the run CPU-bound")
	flag.Float64Var(&cfg.prefillRate, "prefill-rate", 100000, "the engine's prefill rate, prompt tokens/s")
	flag.DurationVar(&cfg.timeout, "timeout", 5*time.Minute, "bound on the whole run")
	flag.Func("peer", "nginx or caddy (repeatable, or comma-separated): run it as a plain streaming reverse proxy as one more side, interleaved with the others", func(v string) error {
		for name := range strings.SplitSeq(v, ",") {
			if !slices.Contains(peers, name) {
				return fmt.Errorf("%q: want one of %v", name, peers)
			}
			if slices.Contains(cfg.peers, name) {
				return fmt.Errorf("%q named twice", name)
			}
			cfg.peers = append(cfg.peers, name)
		}
		return nil
	})
	flag.BoolVar(&cfg.floor, "floor", false, "run minimal Go relays (a goroutine pair per connection, and one epoll loop) as more sides: the Go runtime's floor for the same streams")
	flag.IntVar(&cfg.sequential, "sequential", 0, "N > 0: instead of the stream counts, N single requests per side per round, one at a time, the sides in turn request by request; prints added latency to first token and to the stream's end")
	flag.Parse()
	cfg.serveEnv = strings.Fields(*serveEnv)
	for f := range strings.SplitSeq(*streams, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1024 {
			fmt.Fprintf(os.Stderr, "bench-proxy: -streams %q: want counts in 1..1024\n", *streams)
			os.Exit(2)
		}
		cfg.streams = append(cfg.streams, n)
	}
	if cfg.bin == "" || cfg.rounds < 1 || cfg.phase <= 0 || cfg.tokens < 1 || cfg.promptWords < 1 || cfg.sequential < 0 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench-proxy:", err)
		os.Exit(1)
	}
}

// side is one way to the engine: direct or through the proxy.
type side struct {
	name   string
	url    string // .../v1/completions
	client *http.Client
	proxy  *proc // nil: direct
}

// logTail is the end of s's proxy's log, to go with an error, or "".
func (s *side) logTail() string {
	if s.proxy == nil {
		return ""
	}
	return fmt.Sprintf("\n%s's log ends:\n%s", s.name, s.proxy.tail())
}

// phase is one side's figures for one stream count in one round.
type phase struct {
	ttfts     []time.Duration
	totals    []time.Duration // to the end of the body
	hops      []time.Duration // TTFT less the engine's own span, where it reports one
	sendLegs  []time.Duration // of hops: from sending the request to the engine receiving it
	tokens    int
	wall      time.Duration
	proxyCPU  time.Duration // the serve process's, over the phase
	failed    int
	firstFail error
}

// result is one streamed completion's figures.
type result struct {
	ttft    time.Duration // to its first data line
	total   time.Duration // to the end of its body
	hop     time.Duration // TTFT less the engine's own span, or 0
	sendLeg time.Duration // of hop: from sending the request to the engine receiving it
	tokens  int
}

func run(ctx context.Context, cfg config) error {
	home, err := os.MkdirTemp("", "bench-proxy-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	eng, engineAddr, err := startEngine(ctx, cfg, home)
	if err != nil {
		return err
	}
	defer eng.stop()
	srv, err := startServe(ctx, cfg.bin, "serve", home, engineAddr, cfg.serveEnv)
	if err != nil {
		return err
	}
	defer srv.stop()
	var cmp *proc
	if cfg.compareBin != "" {
		if cmp, err = startServe(ctx, cfg.compareBin, "serve-compare", home, engineAddr, cfg.serveEnv); err != nil {
			return err
		}
		defer cmp.stop()
	}

	maxN := slices.Max(cfg.streams)
	newClient := func() *http.Client {
		return &http.Client{Transport: &http.Transport{
			MaxIdleConns: 2 * maxN, MaxIdleConnsPerHost: 2 * maxN, DisableCompression: true,
		}}
	}
	sides := []*side{
		{name: "direct", url: "http://" + engineAddr + "/v1/completions", client: newClient()},
		{name: "proxied", url: "http://" + srv.addr + "/v1/completions", client: newClient(), proxy: srv},
	}
	if cmp != nil {
		sides = append(sides, &side{name: "compare", url: "http://" + cmp.addr + "/v1/completions", client: newClient(), proxy: cmp})
	}
	for _, name := range cfg.peers {
		var p *proc
		var err error
		switch name {
		case "nginx":
			p, err = startNginx(ctx, home, engineAddr)
		case "caddy":
			p, err = startCaddy(ctx, home, engineAddr)
		}
		if err != nil {
			return err
		}
		defer p.stop()
		sides = append(sides, &side{name: name, url: "http://" + p.addr + "/v1/completions", client: newClient(), proxy: p})
	}
	if cfg.floor {
		for _, mode := range floorModes {
			p, err := startFloor(ctx, home, mode, engineAddr)
			if err != nil {
				return err
			}
			defer p.stop()
			sides = append(sides, &side{name: mode, url: "http://" + p.addr + "/v1/completions", client: newClient(), proxy: p})
		}
	}
	body := requestBody(cfg)

	printMachine(cfg, engineAddr, sides)
	// Warm the connection pools and the engine.
	warm := maxN
	if cfg.sequential > 0 {
		warm = 1
	}
	for _, s := range sides {
		if p := runPhase(ctx, s, warm, cfg.phase/4, body); p.failed > 0 {
			return fmt.Errorf("warm-up %s: %d requests failed: %v%s", s.name, p.failed, p.firstFail, s.logTail())
		}
	}
	if cfg.sequential > 0 {
		return runSequential(ctx, cfg, sides, body)
	}

	results := map[int]map[string][]phase{}
	for _, n := range cfg.streams {
		results[n] = map[string][]phase{}
	}
	for r := range cfg.rounds {
		for _, n := range cfg.streams {
			order := slices.Clone(sides)
			if r%2 == 1 {
				slices.Reverse(order)
			}
			for _, s := range order {
				if ctx.Err() != nil {
					return fmt.Errorf("timed out in round %d: %w", r+1, ctx.Err())
				}
				p := runPhase(ctx, s, n, cfg.phase, body)
				if p.failed > 0 {
					return fmt.Errorf("round %d, %d streams, %s: %d requests failed: %v%s", r+1, n, s.name, p.failed, p.firstFail, s.logTail())
				}
				results[n][s.name] = append(results[n][s.name], p)
			}
		}
		fmt.Fprintf(os.Stderr, "bench-proxy: round %d of %d done\n", r+1, cfg.rounds)
	}
	report(cfg, sides, results)
	return nil
}

func requestBody(cfg config) []byte {
	words := make([]string, cfg.promptWords)
	for i := range words {
		words[i] = "w" + strconv.Itoa(i)
	}
	return fmt.Appendf(nil, `{"model":"reference-sim","stream":true,"stream_options":{"include_usage":true},"max_tokens":%d,"prompt":%q}`,
		cfg.tokens, strings.Join(words, " "))
}

// runPhase runs n clients, each sending requests back to back until d has
// passed; the phase ends when the last request in flight does. A proxy's
// CPU time is read around the phase.
func runPhase(ctx context.Context, s *side, n int, d time.Duration, body []byte) phase {
	var mu sync.Mutex
	var p phase
	var cpu0 time.Duration
	if s.proxy != nil {
		cpu0 = cpuTime(s.proxy.pid)
	}
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				r, err := stream(ctx, s, body)
				mu.Lock()
				p.add(r, err)
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	p.wall = time.Since(start)
	if s.proxy != nil {
		p.proxyCPU = cpuTime(s.proxy.pid) - cpu0
	}
	return p
}

// add counts one request's result, or its failure, in p.
func (p *phase) add(r result, err error) {
	if err != nil {
		if p.failed == 0 {
			p.firstFail = err
		}
		p.failed++
		return
	}
	p.ttfts = append(p.ttfts, r.ttft)
	p.totals = append(p.totals, r.total)
	if r.hop != 0 {
		p.hops = append(p.hops, r.hop)
		p.sendLegs = append(p.sendLegs, r.sendLeg)
	}
	p.tokens += r.tokens
}

// stream sends one streamed completion and reads it to the end. It returns
// the time to its first data line and to the end of the body; the hops'
// share of the first, the TTFT less the engine's own span from receiving
// the request to flushing the first token (its usage chunk's
// server_timing, wall-clock on this machine), or 0 when the engine reports
// none, and of that the request's leg, from sending it to the engine
// receiving it; and the tokens it carried (data lines with text).
func stream(ctx context.Context, s *side, body []byte) (result, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", s.url, bytes.NewReader(body))
	if err != nil {
		return result{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	t0 := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return result{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return result{}, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	var r result
	rd := sse.NewReader(resp.Body, sse.Options{BufferSize: 8 << 10})
	var first time.Time
	var timing *serverTiming
	done := false
	events := 0
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			r.total = time.Since(t0)
			break
		}
		if err != nil {
			return result{}, fmt.Errorf("after %d events: %w", events, err)
		}
		events++
		if first.IsZero() {
			first = ev.At
		}
		switch data := ev.Data; {
		case bytes.HasPrefix(data, []byte("[DONE]")):
			done = true
		case bytes.Contains(data, []byte(`"server_timing"`)):
			var c struct {
				ServerTiming *serverTiming `json:"server_timing"`
			}
			if json.Unmarshal(data, &c) == nil {
				timing = c.ServerTiming
			}
		case bytes.Contains(data, []byte(`"text":`)):
			r.tokens++
		}
	}
	if !done || first.IsZero() {
		return result{}, fmt.Errorf("the stream ended before [DONE], after %d events", events)
	}
	r.ttft = first.Sub(t0)
	if timing != nil && timing.FirstTokenUnixNs > timing.ReceivedUnixNs && timing.ReceivedUnixNs > 0 {
		r.hop = r.ttft - time.Duration(timing.FirstTokenUnixNs-timing.ReceivedUnixNs)
		r.sendLeg = time.Duration(timing.ReceivedUnixNs - t0.UnixNano())
	}
	return r, nil
}

// serverTiming is the reference engine's stamp in its usage chunk.
type serverTiming struct {
	ReceivedUnixNs   int64 `json:"received_unix_ns"`
	FirstTokenUnixNs int64 `json:"first_token_unix_ns"`
}

func report(cfg config, sides []*side, results map[int]map[string][]phase) {
	fmt.Println()
	fmt.Println("TTFT as the clients see it (to the first data line), and tokens/s as they receive them:")
	fmt.Println()
	fmt.Println("streams | side    | direct p50/p99 ms | proxied p50/p99 ms | added p50 ms (rounds min..max) | added p99 ms | tok/s direct | proxied | proxied/direct (rounds min..max) | proxy CPU cores | CPU ms per 1000 events")
	fmt.Println("--------|---------|-------------------|--------------------|--------------------------------|--------------|--------------|---------|----------------------------------|-----------------|-----------------------")
	for _, n := range cfg.streams {
		d := results[n]["direct"]
		dAll := pool(d)
		for _, s := range sides[1:] {
			p := results[n][s.name]
			var addedP50, ratios []float64
			for i := range d {
				addedP50 = append(addedP50, ms(pct(p[i].ttfts, 0.5)-pct(d[i].ttfts, 0.5)))
				ratios = append(ratios, rate(p[i])/rate(d[i]))
			}
			pAll := pool(p)
			var cpu, wall time.Duration
			events := 0
			for _, ph := range p {
				cpu += ph.proxyCPU
				wall += ph.wall
				events += ph.tokens // one streamed chunk a token
			}
			fmt.Printf("%7d | %-7s | %7.2f / %-7.2f | %7.2f / %-8.2f | %+6.2f (%+.2f..%+.2f)          | %+12.2f | %12.0f | %7.0f | %.4f (%.4f..%.4f)        | %.2f            | %.1f\n",
				n, s.name, ms(pct(dAll.ttfts, 0.5)), ms(pct(dAll.ttfts, 0.99)), ms(pct(pAll.ttfts, 0.5)), ms(pct(pAll.ttfts, 0.99)),
				ms(pct(pAll.ttfts, 0.5)-pct(dAll.ttfts, 0.5)), slices.Min(addedP50), slices.Max(addedP50),
				ms(pct(pAll.ttfts, 0.99)-pct(dAll.ttfts, 0.99)),
				rate(dAll), rate(pAll), rate(pAll)/rate(dAll), slices.Min(ratios), slices.Max(ratios), cpu.Seconds()/wall.Seconds(),
				float64(cpu.Milliseconds())/max(float64(events)/1000, 1e-9))
		}
	}
	fmt.Println()
	fmt.Println("The hops' share of TTFT: TTFT less the engine's own span from request received to first token flushed")
	fmt.Println("(its server_timing), so the engine's step alignment is out of it; added = what the proxy's two hops add:")
	fmt.Println()
	fmt.Println("streams | side    | direct p50/p99 ms | proxied p50/p99 ms | added p50 ms (rounds min..max) | added p99 ms | of added p50: request leg, answer leg")
	fmt.Println("--------|---------|-------------------|--------------------|--------------------------------|--------------|--------------------------------------")
	for _, n := range cfg.streams {
		d := results[n]["direct"]
		dAll := pool(d)
		for _, s := range sides[1:] {
			p := results[n][s.name]
			pAll := pool(p)
			if len(dAll.hops) == 0 || len(pAll.hops) == 0 {
				fmt.Printf("%7d | %-7s | n/a: the engine reports no server_timing\n", n, s.name)
				continue
			}
			var addedP50 []float64
			for i := range d {
				if len(p[i].hops) > 0 && len(d[i].hops) > 0 {
					addedP50 = append(addedP50, ms(pct(p[i].hops, 0.5)-pct(d[i].hops, 0.5)))
				}
			}
			sendAdded := pct(pAll.sendLegs, 0.5) - pct(dAll.sendLegs, 0.5)
			fmt.Printf("%7d | %-7s | %7.2f / %-7.2f | %7.2f / %-8.2f | %+6.2f (%+.2f..%+.2f)          | %+12.2f | %+.2f, %+.2f\n",
				n, s.name, ms(pct(dAll.hops, 0.5)), ms(pct(dAll.hops, 0.99)), ms(pct(pAll.hops, 0.5)), ms(pct(pAll.hops, 0.99)),
				ms(pct(pAll.hops, 0.5)-pct(dAll.hops, 0.5)), slices.Min(addedP50), slices.Max(addedP50),
				ms(pct(pAll.hops, 0.99)-pct(dAll.hops, 0.99)),
				ms(sendAdded), ms(pct(pAll.hops, 0.5)-pct(dAll.hops, 0.5)-sendAdded))
		}
	}
	fmt.Printf("\n%d rounds of %v per side per stream count, sides in turn (the order reversed every other round)\n", cfg.rounds, cfg.phase)
	fmt.Printf("load average at the end: %s\n", loadAvg())
}

// pool is every round's phases of one side as one.
func pool(ps []phase) phase {
	var out phase
	for _, p := range ps {
		out.ttfts = append(out.ttfts, p.ttfts...)
		out.totals = append(out.totals, p.totals...)
		out.hops = append(out.hops, p.hops...)
		out.sendLegs = append(out.sendLegs, p.sendLegs...)
		out.tokens += p.tokens
		out.wall += p.wall
	}
	return out
}

func rate(p phase) float64 { return float64(p.tokens) / p.wall.Seconds() }

// pct is the q-quantile (0..1) of ds by the project's one percentile rule
// (bench.Percentile), as the product's figures are.
func pct(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return time.Duration(bench.Percentile(s, 100*q))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func printMachine(cfg config, engineAddr string, sides []*side) {
	host, _ := os.Hostname()
	cpuModel := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				cpuModel = strings.TrimSpace(strings.TrimLeft(v, " \t:"))
				break
			}
		}
	}
	fmt.Printf("machine: %s, %s, %d CPUs, %s %s/%s; load average %s\n", host, cpuModel, runtime.NumCPU(),
		runtime.Version(), runtime.GOOS, runtime.GOARCH, loadAvg())
	fmt.Printf("engine %s: decode %g tok/s per stream (batch slowdown 0), prefill %g tok/s, %d prompt words, max_tokens %d\n",
		engineAddr, cfg.decodeRate, cfg.prefillRate, cfg.promptWords, cfg.tokens)
	for _, s := range sides[1:] {
		switch s.name {
		case "nginx":
			fmt.Printf("%-7s %s: %s (%s), one process, proxy_buffering off, HTTP/1.1 keep-alive upstream to %s\n", s.name, s.proxy.addr, s.proxy.bin, nginxVersion(s.proxy.bin), engineAddr)
			continue
		case "caddy":
			fmt.Printf("%-7s %s: %s (%s), one process, reverse_proxy flush_interval -1, HTTP/1.1 keep-alive upstream to %s\n", s.name, s.proxy.addr, s.proxy.bin, caddyVersion(s.proxy.bin), engineAddr)
			continue
		case "relay", "epoll":
			fmt.Printf("%-7s %s: floor, %s (this program) relaying TCP to %s, no HTTP, no metering\n", s.name, s.proxy.addr, floorHow[s.name], engineAddr)
			continue
		}
		fmt.Printf("%-7s %s: %s %s serve --proxy-to http://%s/v1\n", s.name, s.proxy.addr, strings.Join(cfg.serveEnv, " "), s.proxy.bin, engineAddr)
	}
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// proc is a child process: the engine or serve.
type proc struct {
	name string
	bin  string
	cmd  *exec.Cmd
	pid  int
	addr string
	log  *os.File
}

func startEngine(ctx context.Context, cfg config, home string) (*proc, string, error) {
	p, err := start(ctx, "engine", cfg.bin, home, nil, "engine", "--host", "127.0.0.1", "--port", "0", "--load-ms", "0",
		"--decode-rate", fmt.Sprint(cfg.decodeRate), "--prefill-rate", fmt.Sprint(cfg.prefillRate),
		"--batch-slowdown", "0", "--batch-capacity", strconv.Itoa(2*slices.Max(cfg.streams)), "--sample-ms", "1000")
	if err != nil {
		return nil, "", err
	}
	// The engine names its address on stderr: "... serving "m" on http://ADDR/v1".
	for i := 0; i < 200 && ctx.Err() == nil; i++ {
		b, _ := os.ReadFile(p.log.Name())
		if _, rest, ok := bytes.Cut(b, []byte(" on http://")); ok {
			if addr, _, ok := bytes.Cut(rest, []byte("/v1")); ok {
				p.addr = string(addr)
				if waitHTTP(ctx, "http://"+p.addr+"/health") {
					return p, p.addr, nil
				}
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.stop()
	return nil, "", fmt.Errorf("the engine did not come up:\n%s", p.tail())
}

func startServe(ctx context.Context, bin, name, home, engineAddr string, env []string) (*proc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	// Each serve has a home of its own: the history's database is locked.
	dir := home + "/" + name
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	p, err := start(ctx, name, bin, home, env, "serve", "--addr", addr, "--home", dir, "--proxy-to", "http://"+engineAddr+"/v1")
	if err != nil {
		return nil, err
	}
	return p.up(ctx, addr, "/healthz")
}

// freeAddr is a loopback address no one listens on, for a child to take.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// up waits until p answers GET path on addr with 200; p is stopped if it
// does not.
func (p *proc) up(ctx context.Context, addr, path string) (*proc, error) {
	p.addr = addr
	if !waitHTTP(ctx, "http://"+addr+path) {
		p.stop()
		return nil, fmt.Errorf("%s did not come up:\n%s", p.name, p.tail())
	}
	return p, nil
}

func start(ctx context.Context, name, bin, home string, env []string, args ...string) (*proc, error) {
	logf, err := os.Create(home + "/" + name + ".log")
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	return &proc{name: name, bin: bin, cmd: cmd, pid: cmd.Process.Pid, log: logf}, nil
}

// waitHTTP polls url until it answers 200, for up to 10 s.
func waitHTTP(ctx context.Context, url string) bool {
	for i := 0; i < 200 && ctx.Err() == nil; i++ {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		fmt.Fprintf(os.Stderr, "bench-proxy: %s did not stop within 10 s of SIGTERM; killing it\n", p.name)
		_ = p.cmd.Process.Kill()
		<-done
	}
	p.log.Close()
}

func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log.Name())
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// cpuTime is a process's utime+stime, all its threads' (the kernel sums
// them in /proc/PID/stat; /proc/PID/task/TID/stat is one thread's), read
// with procfs as the other tools read it; 0 when it cannot be read.
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
