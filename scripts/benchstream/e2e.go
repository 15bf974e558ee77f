package main

// The end-to-end mode (-e2e): what a user of the panel feels. A poster
// POSTs one request.finished every -post-every (5 ms on average), without
// pause and for a second past the measuring window, so every fan-out
// measured runs while events keep coming; the stream clients run in a
// process of their own (this binary, -role clients), as browsers are, and
// report for every frame they receive the newest request it carries. The
// lag of a frame at a client is its arrival less the moment the POST of
// that newest request began: ingest, reduce, the wait for the frame's
// tick, encode and fan-out, together. The stream sends a client
// at most two frames a second, so a frame is at most one tick (500 ms)
// behind the newest post by design at the moment it is encoded; what the
// fan-out adds, and what it makes the POSTs wait, shows on top of that.
//
// The lag is reported twice: by the kernel's receive time
// (shared/arrival, on Linux), which is what the server's work costs, and by the
// time the client had read the frame, which adds the clients' own
// process: a thousand clients in one process on the server's two cores
// queue behind each other there, as browsers on their own machines would
// not. -sweep runs several client counts in turn, -rounds times, each on
// a fresh server, and sets each count's p99 beside the smallest count's
// of the same round. The POSTs' own times are reported too, and the gap
// from one POST's start to the next: a poster on the same busy cores
// falls behind its pace, and the newest request a frame can carry is
// then that much older before the server has it.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/arrival"
	"github.com/mlx-bun/mlx-metrics/shared/sse"
)

var reqPrefix = []byte(`"requestId":"p-`)

// newestRequest is the n of the last requestId "p-<n>" in a frame: the
// snapshot lists recent requests newest last, and the poster numbers them
// in order. Reading from the end keeps each client's work small: the
// clients share the server's cores.
func newestRequest(data []byte) int64 {
	i := bytes.LastIndex(data, reqPrefix)
	if i < 0 {
		return 0
	}
	data = data[i+len(reqPrefix):]
	end := bytes.IndexByte(data, '"')
	if end < 0 {
		return 0
	}
	n, _ := strconv.ParseInt(string(data[:end]), 10, 64)
	return n
}

// clientsMain is -role clients: it connects n stream clients to addr,
// says "ready", and once its stdin closes prints "<newest request n>
// <read unix ns> <arrival unix ns>" for every frame each client received:
// when the client had read the frame, and when the kernel had received it
// (0 where that is not known). Each client
// keeps its own record while reading, so that measuring costs the reading
// clients no lock and no output.
func clientsMain(addr string, n int) error {
	var mu sync.Mutex
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	var conns []net.Conn
	type seen struct{ req, at, arrived int64 }
	var records []*[]seen
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	var readers sync.WaitGroup // done once every reader has seen its connection closed
	var dialErr error
	for range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			conn, body, err := openStream(addr)
			mu.Lock()
			if err != nil {
				dialErr = err
				mu.Unlock()
				return
			}
			conns = append(conns, conn)
			mine := &[]seen{}
			records = append(records, mine)
			mu.Unlock()
			readers.Add(1)
			go func() {
				defer readers.Done()
				rd := sse.NewReader(body, sse.Options{MaxBytes: maxFrame})
				for {
					ev, err := rd.Next()
					if err != nil {
						return
					}
					if req := newestRequest(ev.Data); req > 0 {
						*mine = append(*mine, seen{req, ev.At.UnixNano(), lastArrival(conn)})
					}
				}
			}()
		}()
	}
	wg.Wait()
	if dialErr != nil {
		return dialErr
	}
	mu.Lock()
	fmt.Fprintln(out, "ready")
	out.Flush()
	mu.Unlock()
	io.Copy(io.Discard, os.Stdin) // until the parent closes it
	mu.Lock()
	for _, c := range conns {
		c.Close()
	}
	readers.Wait() // their records are whole, and no longer written
	for _, rs := range records {
		for _, r := range *rs {
			fmt.Fprintf(out, "%d %d %d\n", r.req, r.at, r.arrived)
		}
	}
	out.Flush()
	mu.Unlock()
	return nil
}

// openStream opens a stream whose reads carry their arrival time where
// the system gives it (shared/arrival).
func openStream(addr string) (net.Conn, *bufio.Reader, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	conn := arrival.Stamp(nc)
	req, _ := http.NewRequest("GET", "http://"+addr+"/api/metrics/stream", nil)
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, nil, err
	}
	// The body is read as it comes, chunk-size lines and all, and a client
	// spares the chunked reader's work: each event is one chunk, whose size
	// line is a field the SSE reader ignores and whose CRLF after the event
	// is a blank line.
	br := bufio.NewReaderSize(conn, 64<<10)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	if resp.StatusCode != 200 {
		conn.Close()
		return nil, nil, fmt.Errorf("GET /stream: %d", resp.StatusCode)
	}
	return conn, br, nil
}

// lastArrival is when the kernel received the bytes of conn's last read,
// in Unix ns; 0 where that is not known.
func lastArrival(conn net.Conn) int64 {
	if s, ok := conn.(arrival.Stamped); ok {
		return s.LastArrival()
	}
	return 0
}

// e2eResult is one run's p99s; socket is 0 where the kernel's receive
// time is not known.
type e2eResult struct{ socket, read, post time.Duration }

// pace spaces the POSTs: every gap is the mean within ±20 %, drawn at
// random. A fixed 5 ms would divide the stream's 500 ms tick, so every
// tick of a run would find the newest request equally old (the same
// phase, whatever it happened to be), and the 10-client p99 would be one
// draw of that phase; varied, the ticks meet every phase in each run.
type pace struct {
	mean time.Duration
	due  time.Time
}

func newPace(mean time.Duration, now time.Time) *pace { return &pace{mean: mean, due: now} }

// next is how long to wait from now for the next POST; a poster fallen
// behind posts at once and goes on from now, as a Ticker drops ticks.
func (p *pace) next(now time.Time) time.Duration {
	p.due = p.due.Add(p.mean*4/5 + rand.N(p.mean*2/5+1))
	if p.due.Before(now) {
		p.due = now
	}
	return p.due.Sub(now)
}

// postTail is how long the POSTs go on after the measuring window: two
// ticks, longer than a 10,000-client fan-out.
const postTail = time.Second

// runE2E measures the end-to-end lag (the mode's comment, above) and
// prints it.
func runE2E(ctx context.Context, cfg config) error {
	_, err := measureE2E(ctx, cfg)
	return err
}

func measureE2E(ctx context.Context, cfg config) (e2eResult, error) {
	srv, err := startServer(ctx, cfg)
	if err != nil {
		return e2eResult{}, err
	}
	defer srv.stop()
	p := &poster{base: srv.base, token: cfg.token, form: cfg.form, sent: map[int64]time.Time{}}
	if err := p.fill(cfg.models); err != nil {
		return e2eResult{}, err
	}
	self, err := os.Executable()
	if err != nil {
		return e2eResult{}, err
	}
	child := exec.CommandContext(ctx, self, "-role", "clients", "-addr", srv.addr, "-clients", strconv.Itoa(cfg.clients))
	stdin, _ := child.StdinPipe()
	stdout, _ := child.StdoutPipe()
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		return e2eResult{}, err
	}
	defer child.Wait()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<16), 1<<16)
	if !lines.Scan() || lines.Text() != "ready" {
		stdin.Close()
		return e2eResult{}, fmt.Errorf("the clients did not connect: %q %v", lines.Text(), lines.Err())
	}
	// Read what the clients report while posting.
	type report struct{ req, at, arrived int64 }
	var reports []report
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		for lines.Scan() {
			f := strings.Fields(lines.Text())
			if len(f) != 3 {
				continue
			}
			req, _ := strconv.ParseInt(f[0], 10, 64)
			at, _ := strconv.ParseInt(f[1], 10, 64)
			arrived, _ := strconv.ParseInt(f[2], 10, 64)
			reports = append(reports, report{req, at, arrived})
		}
	}()
	time.Sleep(time.Second) // every client's opening frame out of the way

	// POST one request at a time, every -post-every, each timed. Frames
	// count while the window lasts; the POSTs go on for a tail after it, so
	// that every frame counted, the last fan-out's too, went out while
	// requests kept coming. (Without the tail the frames of the tick after
	// the last POST carried a request as old as that tick's wait, up to an
	// Interval, and at 1,000 clients they are some 6 % of all.)
	sent := map[int64]int64{} // request n -> POST began, unix ns
	var postLags []time.Duration
	start := srv.usage()
	window := time.Now().Add(cfg.duration)
	deadline := window.Add(postTail)
	pace := newPace(cfg.postEvery, time.Now())
	var n int64
	var postErr error
	for time.Now().Before(deadline) && ctx.Err() == nil && postErr == nil {
		time.Sleep(pace.next(time.Now()))
		n++
		at := time.Now()
		sent[n] = at.UnixNano()
		line := p.event("request.finished", at.UnixMilli(), fmt.Sprintf(
			`"model":"model-0","requestId":"p-%d","finish":"stop","promptTokens":512,"cachedPromptTokens":0,"completionTokens":64,"queueMs":1,"ttftMs":40,"prefillTokensPerSecond":2000,"decodeTokensPerSecond":60,"totalMs":1100`, n))
		postErr = p.send([]string{line})
		postLags = append(postLags, time.Since(at))
	}
	end := srv.usage()
	stdin.Close()
	<-readDone
	if postErr != nil {
		return e2eResult{}, postErr
	}
	var lags, arrivals []time.Duration
	for _, r := range reports {
		if r.at >= window.UnixNano() {
			continue // read in the tail
		}
		if t0, ok := sent[r.req]; ok {
			lags = append(lags, time.Duration(r.at-t0))
			if r.arrived > 0 {
				arrivals = append(arrivals, time.Duration(r.arrived-t0))
			}
		}
	}
	if len(lags) == 0 {
		return e2eResult{}, errors.New("no frame carried a posted request")
	}
	var postGaps []time.Duration // one POST's start to the next's
	for i := int64(2); i <= n; i++ {
		postGaps = append(postGaps, time.Duration(sent[i]-sent[i-1]))
	}
	for _, d := range [][]time.Duration{lags, arrivals, postLags, postGaps} {
		slices.Sort(d)
	}
	wall := end.at.Sub(start.at)
	fmt.Printf("e2e: %d clients (own process), %d models, one request POSTed every %v for %v and %v after (%d posts)\n",
		cfg.clients, cfg.models+1, cfg.postEvery, cfg.duration, postTail, n)
	printSpread("newest request -> frame at client's socket", arrivals, fmt.Sprintf("  (%d frames)", len(arrivals)))
	printSpread("newest request -> frame read by client", lags, fmt.Sprintf("  (%d frames)", len(lags)))
	printSpread("POST answered", postLags, "")
	printSpread("POST to next POST", postGaps, "")
	fmt.Printf("server CPU %.3f cores\n", (end.cpu-start.cpu).Seconds()/wall.Seconds())
	res := e2eResult{read: pct(lags, 0.99), post: pct(postLags, 0.99)}
	if len(arrivals) > 0 {
		res.socket = pct(arrivals, 0.99)
	}
	return res, nil
}

// printSpread prints one line of d's p50, p99 and max (d sorted), nothing
// when d is empty.
func printSpread(label string, d []time.Duration, suffix string) {
	if len(d) == 0 {
		return
	}
	fmt.Printf("%-40s  p50 %.1f ms  p99 %.1f ms  max %.1f ms%s\n", label, ms(pct(d, 0.5)), ms(pct(d, 0.99)), ms(d[len(d)-1]), suffix)
}

// sweepE2E measures each client count of counts in turn, rounds times,
// and prints each count's p99s as ranges over the rounds with their ratio
// to the same round's p99 at counts[0].
func sweepE2E(ctx context.Context, cfg config, counts []int, rounds int) error {
	res := make([][]e2eResult, len(counts)) // [count][round]
	for r := range rounds {
		for i, n := range counts {
			cfg.clients = n
			fmt.Printf("-- round %d of %d\n", r+1, rounds)
			got, err := measureE2E(ctx, cfg)
			if err != nil {
				return err
			}
			res[i] = append(res[i], got)
		}
	}
	fmt.Printf("\np99, range over %d round(s) (ratio: to the same round's %d clients)\n", rounds, counts[0])
	fmt.Printf("%8s  %-16s %-12s  %-16s %-12s  %s\n", "clients", "socket p99", "ratio", "read p99", "ratio", "POST p99")
	for i, n := range counts {
		var socket, read, post, socketX, readX []float64
		for r, got := range res[i] {
			base := res[0][r]
			read, post = append(read, ms(got.read)), append(post, ms(got.post))
			if got.socket > 0 && base.socket > 0 { // 0: not known here
				socket = append(socket, ms(got.socket))
				socketX = append(socketX, float64(got.socket)/float64(base.socket))
			}
			readX = append(readX, float64(got.read)/float64(base.read))
		}
		fmt.Printf("%8d  %-16s %-12s  %-16s %-12s  %s\n", n, span(socket, "ms"), span(socketX, "x"),
			span(read, "ms"), span(readX, "x"), span(post, "ms"))
	}
	return nil
}

// span is "lo–hi unit" over vs ("v unit" for one value), "-" when empty.
func span(vs []float64, unit string) string {
	if len(vs) == 0 {
		return "-"
	}
	lo, hi := slices.Min(vs), slices.Max(vs)
	if fmt.Sprintf("%.1f", lo) == fmt.Sprintf("%.1f", hi) {
		return fmt.Sprintf("%.1f %s", lo, unit)
	}
	return fmt.Sprintf("%.1f–%.1f %s", lo, hi, unit)
}

// parseCounts reads -sweep's comma-separated client counts.
func parseCounts(s string) ([]int, error) {
	var counts []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-sweep %q: want client counts like 10,500,1000", s)
		}
		counts = append(counts, n)
	}
	return counts, nil
}

// e2eFlags are the mode's flags, besides the shared ones.
func e2eFlags(cfg *config) {
	flag.BoolVar(&cfg.e2e, "e2e", false, "measure end to end: a request POSTed every -post-every, clients in a process of their own, newest request to frame at client")
	flag.DurationVar(&cfg.postEvery, "post-every", 5*time.Millisecond, "with -e2e: the mean gap between two POSTs of one request (each gap within ±20 %)")
	flag.StringVar(&cfg.sweep, "sweep", "", "with -e2e: client counts to measure in turn, e.g. 10,500,1000 (instead of -clients)")
	flag.IntVar(&cfg.rounds, "rounds", 1, "with -sweep: how many times to measure each count, interleaved")
	flag.StringVar(&cfg.role, "role", "", "internal: clients (the clients' process)")
	flag.StringVar(&cfg.addr, "addr", "", "internal: the server's address, for -role clients")
}
