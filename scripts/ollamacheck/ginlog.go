package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// ginLine is one request ollama's HTTP server logged (gin's access log):
// its latency, from the request reaching the handler to its last byte
// written, for the completions endpoints.
var ginLine = regexp.MustCompile(`^\[GIN\] [^|]+\| (\d{3}) \|\s*(\S+) \|[^|]+\| POST\s+"(/v1/(?:chat/)?completions)"`)

type logged struct {
	status   string
	latency  time.Duration
	endpoint string
}

// readGIN reads the completions requests ollama logged, in order.
func readGIN(r io.Reader) ([]logged, error) {
	var out []logged
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := ginLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		d, err := time.ParseDuration(m[2])
		if err != nil || d < 0 {
			continue
		}
		out = append(out, logged{m[1], d, m[3]})
	}
	return out, sc.Err()
}

// sameRequests checks the run's requests against ollama's log of the
// same requests: the run is the first to send completions to that ollama,
// one at a time through its single-request phases (decode, cold TTFT, the
// warm phase's priming and runs, long context), so the log's lines are its
// requests in order. Each request's time in the run (sent to the end of
// its stream) must be ollama's latency of it within r (the fraction, or
// floorMs): the same request timed by both at once, whatever else the
// machine did meanwhile.
func sameRequests(rec bench.RunRecord, logPath string, r rule) error {
	f, err := os.Open(logPath)
	if err != nil {
		return err
	}
	defer f.Close()
	lines, err := readGIN(f)
	if err != nil {
		return err
	}
	type sent struct {
		name     string
		totalMs  float64 // -1: not recorded (the warm phase's priming)
		endpoint string
	}
	var want []sent
	c := rec.Cells[0]
	for _, ph := range []string{bench.PhaseDecode, bench.PhaseColdTTFT, bench.PhaseWarmTTFT, bench.PhaseLongContext} {
		if ph == bench.PhaseWarmTTFT {
			want = append(want, sent{"warm-ttft priming", -1, "/v1/completions"})
		}
		for _, s := range c.Samples {
			if s.Phase == ph {
				want = append(want, sent{fmt.Sprintf("%s %d", s.Phase, s.Run), s.TotalMs, s.Endpoint})
			}
		}
	}
	if len(lines) < len(want) {
		return fmt.Errorf("ollama's log has %d completions requests, want at least the run's first %d", len(lines), len(want))
	}
	var rows, bad []string
	for i, w := range want {
		l := lines[i]
		if l.endpoint != w.endpoint || l.status != "200" {
			return fmt.Errorf("ollama's request %d was %s %s, want the run's %s (%s): the log is not the run's", i+1, l.status, l.endpoint, w.name, w.endpoint)
		}
		if w.totalMs < 0 {
			continue
		}
		ms := float64(l.latency) / float64(time.Millisecond)
		d := w.totalMs - ms
		rows = append(rows, fmt.Sprintf("| %s | %.1f | %.1f | %+.1f |", w.name, w.totalMs, ms, d))
		if math.Abs(d) > max(r.fraction*ms, r.floorMs) {
			bad = append(bad, fmt.Sprintf("%s: %.1f ms in the run, %.1f ms by ollama", w.name, w.totalMs, ms))
		}
	}
	fmt.Printf("\nThe run's requests beside ollama's log of the same requests (ms, sent to the stream's end; ollama: handler latency)\n\n")
	fmt.Printf("| request | bench-serve | ollama's log | difference |\n|---|--:|--:|--:|\n")
	for _, row := range rows {
		fmt.Println(row)
	}
	if len(bad) > 0 {
		return fmt.Errorf("beyond %.0f %% or %.0f ms of ollama's own log of the same request: %v", 100*r.fraction, r.floorMs, bad)
	}
	fmt.Printf("\nevery request within %.0f %% or %.0f ms of ollama's log of it\n", 100*r.fraction, r.floorMs)
	return nil
}
