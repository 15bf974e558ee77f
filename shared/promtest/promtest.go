// Package promtest runs a real Prometheus server for tests: the binary of
// Debian's prometheus package that scripts/setup takes into out/tools,
// on loopback, with a generated configuration and a temporary storage
// directory, stopped when the test ends. Where it is missing the test
// skips, or fails under scripts/test (tooltest).
package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/tooltest"
)

// Job is one scrape job: its targets (host:port) scraped at MetricsPath
// (/metrics when empty), each with the labels given for it (an "instance"
// label renames the target, as a fleet's configuration may).
type Job struct {
	Name        string
	Targets     []string
	MetricsPath string
	Labels      map[string]map[string]string // per target
}

// Server is a running Prometheus.
type Server struct {
	URL string // http://127.0.0.1:port
	cmd *exec.Cmd
}

// Start runs Prometheus scraping jobs every interval, and returns once it
// answers ready.
func Start(t testing.TB, interval time.Duration, jobs ...Job) *Server {
	t.Helper()
	bin := tooltest.Look(t, "prometheus")
	dir := t.TempDir()
	cfg := config(interval, jobs)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	// A free port may be taken between its choice and Prometheus binding
	// it; a failed start is tried again on another.
	var lastOut string
	for range 3 {
		addr := freeAddr(t)
		cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
			"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr,
			"--log.level=warn", "--web.enable-lifecycle")
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		s := &Server{URL: "http://" + addr, cmd: cmd}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		if s.waitReady(exited, 30*time.Second) {
			t.Cleanup(func() {
				cmd.Process.Kill()
				<-exited
			})
			return s
		}
		cmd.Process.Kill()
		<-exited
		lastOut = out.String()
	}
	t.Fatalf("prometheus did not start:\n%s", lastOut)
	return nil
}

func config(interval time.Duration, jobs []Job) string {
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\nscrape_configs:\n", interval, interval)
	for _, j := range jobs {
		path := j.MetricsPath
		if path == "" {
			path = "/metrics"
		}
		fmt.Fprintf(&b, "  - job_name: %q\n    metrics_path: %q\n    static_configs:\n", j.Name, path)
		for _, target := range j.Targets {
			fmt.Fprintf(&b, "      - targets: [%q]\n", target)
			if l := j.Labels[target]; len(l) > 0 {
				b.WriteString("        labels:\n")
				for k, v := range l {
					fmt.Fprintf(&b, "          %s: %q\n", k, v)
				}
			}
		}
	}
	return b.String()
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitReady polls /-/ready until it answers 200, the process exits or
// timeout passes.
func (s *Server) waitReady(exited <-chan struct{}, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if res, err := http.Get(s.URL + "/-/ready"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(50 * time.Millisecond) // polls a process that signals nothing else
	}
	return false
}

// Sample is one element of an instant query's result.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Query evaluates expr now (/api/v1/query) and returns its samples: one
// for a scalar, each series' for a vector.
func (s *Server) Query(ctx context.Context, expr string) ([]Sample, error) {
	u := s.URL + "/api/v1/query?query=" + url.QueryEscape(expr)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%s: %s", err, body)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%s", r.Error)
	}
	switch r.Data.ResultType {
	case "scalar":
		var v [2]any
		if err := json.Unmarshal(r.Data.Result, &v); err != nil {
			return nil, err
		}
		return []Sample{{Value: parse(v[1])}}, nil
	case "vector":
		var vs []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(r.Data.Result, &vs); err != nil {
			return nil, err
		}
		out := make([]Sample, len(vs))
		for i, v := range vs {
			out[i] = Sample{Labels: v.Metric, Value: parse(v.Value[1])}
		}
		return out, nil
	}
	return nil, fmt.Errorf("result type %s", r.Data.ResultType)
}

func parse(v any) float64 {
	s, _ := v.(string)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return f
}

// WaitScrapes waits until every target has been scraped at least n times
// since Start (counted by the samples of Prometheus' own up series).
func (s *Server) WaitScrapes(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	if err := s.Scraped(n, "1h", timeout); err != nil {
		t.Fatal(err)
	}
}

// Scraped waits until every target has been scraped at least n times over
// the last window (a PromQL range, "10s"), polling for up to timeout, and
// says so in its error if they were not.
func (s *Server) Scraped(n int, window string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		samples, err := s.Query(context.Background(), "min(count_over_time(up["+window+"]))")
		if err == nil && len(samples) == 1 && samples[0].Value >= float64(n) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("prometheus did not scrape every target %d times in %s within %s (%v, %v)", n, window, timeout, samples, err)
		}
		time.Sleep(100 * time.Millisecond) // polls Prometheus, which signals nothing
	}
}
