package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The bodies probe (-bodies 1,2,4,…): for each N, a fresh server is held
// by N connections that declare 32 MiB and send 250 bytes, then sent N
// event bodies of 32 MiB at once; it reports the server's peak RSS, the answers
// and whether every accepted event is in the snapshot. docs/security.md's
// table of bodies in flight comes from it.

// bodyLine is one request.finished event of a fixed length, so that a body
// of many is generated as it is sent, with its length known beforehand.
const bodyLine = `{"type":"request.finished","at":%013d,"model":"org/soak-bodies","requestId":"b%04d-%08d","finish":"stop","promptTokens":100,"cachedPromptTokens":0,"completionTokens":10,"queueMs":1,"ttftMs":50,"prefillTokensPerSecond":2000,"decodeTokensPerSecond":40,"totalMs":300}` + "\n"

// eventBody generates body number id: lines events, the same at each.
type eventBody struct {
	id, lines, next int
	at              int64
	pending         []byte
}

func (b *eventBody) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(b.pending) == 0 {
			if b.next == b.lines {
				break
			}
			b.pending = fmt.Appendf(b.pending[:0], bodyLine, b.at, b.id, b.next)
			b.next++
		}
		k := copy(p[n:], b.pending)
		b.pending = b.pending[k:]
		n += k
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// bodiesRow is one N's figures.
type bodiesRow struct {
	n                   int
	peakMB, declaredMB  float64
	answers             map[string]int // "200", "503", "no answer: …"
	accepted, seen      int64
	budgetPeak, refused int64
}

func parseCounts(list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1024 {
			return nil, fmt.Errorf("-bodies %q: want counts from 1 to 1024, comma-separated", list)
		}
		out = append(out, n)
	}
	return out, nil
}

// runBodies runs the probe for each count and prints its table; false when
// a bound broke (peak RSS over maxRSSMB, or an accepted event lost).
func runBodies(ctx context.Context, bin string, counts []int, maxRSSMB int) (bool, error) {
	fmt.Println("| N | declared only: peak RSS | 32 MiB bodies: answers | accepted events in the snapshot | peak RSS | budget peak |")
	fmt.Println("|---|---|---|---|---|---|")
	ok := true
	for _, n := range counts {
		row, err := bodiesOnce(ctx, bin, n)
		if err != nil {
			return false, fmt.Errorf("N=%d: %w", n, err)
		}
		var answers []string
		for k, v := range row.answers {
			answers = append(answers, fmt.Sprintf("%d × %s", v, k))
		}
		sort.Strings(answers)
		fmt.Printf("| %d | %.0f MB | %s | %d of %d | %.0f MB | %d MiB |\n", n, row.declaredMB, strings.Join(answers, ", "),
			row.seen, row.accepted, row.peakMB, row.budgetPeak>>20)
		if row.peakMB > float64(maxRSSMB) || row.declaredMB > float64(maxRSSMB) || row.seen != row.accepted {
			ok = false
		}
	}
	return ok, nil
}

func bodiesOnce(ctx context.Context, bin string, n int) (*bodiesRow, error) {
	s, err := startFresh(ctx, bin)
	if err != nil {
		return nil, err
	}
	defer s.remove()
	row := &bodiesRow{n: n, answers: map[string]int{}}

	sample := func(stop <-chan struct{}, peak *float64) *sync.WaitGroup {
		var wg sync.WaitGroup
		wg.Go(func() {
			t := time.NewTicker(20 * time.Millisecond)
			defer t.Stop()
			for {
				*peak = max(*peak, s.rss())
				select {
				case <-t.C:
				case <-stop:
					return
				}
			}
		})
		return &wg
	}

	// N connections declaring 32 MiB, sending 250 bytes, held 5 s.
	stop := make(chan struct{})
	sampler := sample(stop, &row.declaredMB)
	var conns []net.Conn
	for range n {
		conn, err := net.Dial("tcp", s.addr)
		if err != nil {
			continue
		}
		fmt.Fprintf(conn, "POST /api/metrics/events HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n%s",
			s.addr, 32<<20, strings.Repeat(" ", 250))
		conns = append(conns, conn)
	}
	time.Sleep(5 * time.Second) // holding them is the probe
	for _, c := range conns {
		c.Close()
	}
	close(stop)
	sampler.Wait()

	// N bodies of 32 MiB at once.
	lines := (32 << 20) / len(fmt.Sprintf(bodyLine, 0, 0, 0))
	at := time.Now().UnixMilli()
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, DisableKeepAlives: true}}
	stop = make(chan struct{})
	sampler = sample(stop, &row.peakMB)
	var mu sync.Mutex
	var accepted atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := &eventBody{id: i, lines: lines, at: at}
			req, _ := http.NewRequestWithContext(ctx, "POST", s.url("/events"), body)
			req.ContentLength = int64(lines * len(fmt.Sprintf(bodyLine, 0, 0, 0)))
			req.Header.Set("Content-Type", "application/x-ndjson")
			key := ""
			res, err := client.Do(req)
			if err != nil {
				key = "no answer"
			} else {
				var reply struct {
					Accepted int64 `json:"accepted"`
				}
				_ = json.NewDecoder(res.Body).Decode(&reply)
				res.Body.Close()
				key = strconv.Itoa(res.StatusCode)
				if res.StatusCode == 200 {
					accepted.Add(reply.Accepted)
				}
			}
			mu.Lock()
			row.answers[key]++
			mu.Unlock()
		})
	}
	wg.Wait()
	close(stop)
	sampler.Wait()
	row.accepted = accepted.Load()
	var snap struct {
		Requests struct{ Finished int64 } `json:"requests"`
	}
	// The store reads the bus on its own goroutine: a moment to catch up.
	waitFor(10*time.Second, func() bool {
		return getJSON(s, "/snapshot", &snap) == nil && snap.Requests.Finished >= row.accepted
	})
	row.seen = snap.Requests.Finished

	var health struct {
		Bodies struct {
			Peak    int64 `json:"peak"`
			Refused int64 `json:"refused"`
		} `json:"bodies"`
	}
	if err := getJSON(s, "/healthz", &health); err == nil {
		row.budgetPeak, row.refused = health.Bodies.Peak, health.Bodies.Refused
	}
	return row, nil
}
