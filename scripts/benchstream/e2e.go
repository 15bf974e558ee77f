package main

// The end-to-end mode (-e2e): what a user of the panel feels. A poster
// POSTs one request.finished every -post-every (5 ms), without pause, so
// the fan-out always runs while events keep coming; the stream clients
// run in a process of their own (this binary, -role clients), as browsers
// are, and report for every frame they receive the newest request it
// carries. The lag of a frame at a client is its arrival less the moment
// the POST of that newest request began: ingest, reduce, the wait for the
// frame's tick, encode and fan-out, and the client's read, together. The
// stream sends a client at most two frames a second, so a frame is at
// most one tick (500 ms) behind the newest post by design at the moment
// it is encoded; what the fan-out adds, and what it makes the POSTs wait,
// shows on top of that.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

var reqPrefix = []byte(`"requestId":"p-`)

// newestRequest is the greatest n of the requestIds "p-<n>" in a frame.
func newestRequest(data []byte) int64 {
	var best int64
	for {
		i := bytes.Index(data, reqPrefix)
		if i < 0 {
			return best
		}
		data = data[i+len(reqPrefix):]
		end := bytes.IndexByte(data, '"')
		if end < 0 {
			return best
		}
		n, _ := strconv.ParseInt(string(data[:end]), 10, 64)
		best = max(best, n)
		data = data[end:]
	}
}

// clientsMain is -role clients: it connects n stream clients to addr,
// says "ready", and once its stdin closes prints "<newest request n>
// <arrival unix ns>" for every frame each client received. Each client
// keeps its own record while reading, so that measuring costs the reading
// clients no lock and no output.
func clientsMain(addr string, n int) error {
	var mu sync.Mutex
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	var conns []net.Conn
	type seen struct{ req, at int64 }
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
				var line []byte
				for {
					part, err := body.ReadSlice('\n')
					line = append(line, part...)
					if err == bufio.ErrBufferFull {
						continue
					}
					if err != nil {
						return
					}
					if data, ok := bytes.CutPrefix(line, dataPrefix); ok {
						now := time.Now().UnixNano()
						if req := newestRequest(data); req > 0 {
							*mine = append(*mine, seen{req, now})
						}
					}
					line = line[:0]
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
			fmt.Fprintf(out, "%d %d\n", r.req, r.at)
		}
	}
	out.Flush()
	mu.Unlock()
	return nil
}

func openStream(addr string) (net.Conn, *bufio.Reader, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/api/metrics/stream", nil)
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, nil, err
	}
	br := bufio.NewReaderSize(conn, 4<<10)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	if resp.StatusCode != 200 {
		conn.Close()
		return nil, nil, fmt.Errorf("GET /stream: %d", resp.StatusCode)
	}
	return conn, bufio.NewReaderSize(resp.Body, 64<<10), nil
}

// runE2E measures the end-to-end lag (the mode's comment, above).
func runE2E(ctx context.Context, cfg config) error {
	srv, err := startServer(ctx, cfg)
	if err != nil {
		return err
	}
	defer srv.stop()
	p := &poster{base: srv.base, token: cfg.token, form: cfg.form, sent: map[int64]time.Time{}}
	if err := p.fill(cfg.models); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	child := exec.CommandContext(ctx, self, "-role", "clients", "-addr", srv.addr, "-clients", strconv.Itoa(cfg.clients))
	stdin, _ := child.StdinPipe()
	stdout, _ := child.StdoutPipe()
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		return err
	}
	defer child.Wait()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<16), 1<<16)
	if !lines.Scan() || lines.Text() != "ready" {
		stdin.Close()
		return fmt.Errorf("the clients did not connect: %q %v", lines.Text(), lines.Err())
	}
	// Read what the clients report while posting.
	type report struct{ req, at int64 }
	var reports []report
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		for lines.Scan() {
			f := strings.Fields(lines.Text())
			if len(f) != 2 {
				continue
			}
			req, _ := strconv.ParseInt(f[0], 10, 64)
			at, _ := strconv.ParseInt(f[1], 10, 64)
			reports = append(reports, report{req, at})
		}
	}()
	time.Sleep(time.Second) // every client's opening frame out of the way

	// POST one request at a time, every -post-every, each timed.
	sent := map[int64]int64{} // request n -> POST began, unix ns
	var postLags []time.Duration
	start := srv.usage()
	deadline := time.Now().Add(cfg.duration)
	tick := time.NewTicker(cfg.postEvery)
	var n int64
	var postErr error
	for time.Now().Before(deadline) && ctx.Err() == nil && postErr == nil {
		<-tick.C
		n++
		at := time.Now()
		sent[n] = at.UnixNano()
		line := p.event("request.finished", at.UnixMilli(), fmt.Sprintf(
			`"model":"model-0","requestId":"p-%d","finish":"stop","promptTokens":512,"cachedPromptTokens":0,"completionTokens":64,"queueMs":1,"ttftMs":40,"prefillTokensPerSecond":2000,"decodeTokensPerSecond":60,"totalMs":1100`, n))
		postErr = p.send([]string{line})
		postLags = append(postLags, time.Since(at))
	}
	tick.Stop()
	time.Sleep(time.Second) // the last frames
	end := srv.usage()
	stdin.Close()
	<-readDone
	if postErr != nil {
		return postErr
	}
	var lags []time.Duration
	for _, r := range reports {
		if t0, ok := sent[r.req]; ok {
			lags = append(lags, time.Duration(r.at-t0))
		}
	}
	if len(lags) == 0 {
		return errors.New("no frame carried a posted request")
	}
	slices.Sort(lags)
	slices.Sort(postLags)
	wall := end.at.Sub(start.at)
	fmt.Printf("e2e: %d clients (own process), %d models, one request POSTed every %v for %v (%d posts)\n",
		cfg.clients, cfg.models+1, cfg.postEvery, cfg.duration, n)
	fmt.Printf("newest request -> frame at client  p50 %.1f ms  p99 %.1f ms  max %.1f ms  (%d frames)\n",
		ms(pct(lags, 0.5)), ms(pct(lags, 0.99)), ms(lags[len(lags)-1]), len(lags))
	fmt.Printf("POST answered                      p50 %.1f ms  p99 %.1f ms  max %.1f ms\n",
		ms(pct(postLags, 0.5)), ms(pct(postLags, 0.99)), ms(postLags[len(postLags)-1]))
	fmt.Printf("server CPU %.3f cores\n", (end.cpu-start.cpu).Seconds()/wall.Seconds())
	return nil
}

// e2eFlags are the mode's flags, besides the shared ones.
func e2eFlags(cfg *config) {
	flag.BoolVar(&cfg.e2e, "e2e", false, "measure end to end: a request POSTed every -post-every, clients in a process of their own, newest request to frame at client")
	flag.DurationVar(&cfg.postEvery, "post-every", 5*time.Millisecond, "with -e2e: the gap between two POSTs of one request")
	flag.StringVar(&cfg.role, "role", "", "internal: clients (the clients' process)")
	flag.StringVar(&cfg.addr, "addr", "", "internal: the server's address, for -role clients")
}
