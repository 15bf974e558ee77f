package main

// TestReadmeCommands runs every command in the README's sh blocks as a user
// would, from the repository root, and checks its other blocks (the events,
// the Prometheus configuration). The README's html snippets run in
// headless Chromium (panel/e2e TestReadmeSnippets); examples_test.go holds
// every command's -h and docs/ to theirs.
//
// What a command cannot do as written in a test is changed, and only that:
// it builds into a temporary directory instead of bin/ and GOBIN, the
// serve commands listen on a free loopback port with a temporary home, and
// the address of the backend (127.0.0.1:7878) and of the host
// (127.0.0.1:8080) are the test's. scripts/run, scripts/test, scripts/setup
// and scripts/build-panel are what runs this test, so they are only checked
// to exist, be executable and parse.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/tooltest"
)

// fence is one fenced block of a Markdown file.
type fence struct {
	info  string // the info string: sh, yaml, html, ndjson
	line  int    // the line of the opening fence
	lines []string
}

func fences(text string) []fence {
	var out []fence
	var cur *fence
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			if cur == nil {
				cur = &fence{info: strings.TrimSpace(strings.TrimPrefix(line, "```")), line: i + 1}
			} else {
				out = append(out, *cur)
				cur = nil
			}
			continue
		}
		if cur != nil {
			cur.lines = append(cur.lines, line)
		}
	}
	return out
}

// trailingComment is a shell comment after a command: two spaces or more,
// then #.
var trailingComment = regexp.MustCompile(`\s{2,}#.*$`)

// readmeRun is what the commands share: the temporary directory, the
// binary the README's go build made, and a backend for the client commands.
type readmeRun struct {
	t       *testing.T // the command's subtest
	top     *testing.T // TestReadmeCommands, which the shared backend outlives no longer
	root    string
	tmp     string
	binary  string // the README's go build's output
	backend string // host:port of a serve the client commands talk to
}

// readmeCheck runs or checks the commands starting with prefix.
type readmeCheck struct {
	prefix string
	check  func(r *readmeRun, cmd string)
}

var readmeChecks = []readmeCheck{
	{"scripts/run", checkScripts},
	{"scripts/test", checkScripts},
	{"scripts/setup && scripts/build-panel", checkScripts},
	{"go install ./backend/cmd/mlx-metrics", func(r *readmeRun, cmd string) {
		gobin := filepath.Join(r.tmp, "gobin")
		r.sh(cmd, "GOBIN="+gobin)
		if _, err := os.Stat(filepath.Join(gobin, "mlx-metrics")); err != nil {
			r.t.Errorf("%s: no binary in GOBIN: %v", cmd, err)
		}
	}},
	{"go build -o bin/mlx-metrics ", func(r *readmeRun, cmd string) {
		r.binary = filepath.Join(r.tmp, "bin", "mlx-metrics")
		r.sh(strings.Replace(cmd, "bin/mlx-metrics", r.binary, 1))
	}},
	{"mlx-metrics serve --events-url ", func(r *readmeRun, cmd string) {
		host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			base := time.Now().UnixMilli()
			for i, line := range r.events() {
				ev, _ := events.Parse([]byte(line))
				ev.At = base + int64(i)  // the host sends them as they happen
				b, _ := json.Marshal(ev) // the flat form
				fmt.Fprintf(w, "id: %d\ndata: %s\n\n", i+1, b)
			}
			w.(http.Flusher).Flush()
			<-req.Context().Done()
		}))
		r.t.Cleanup(host.Close) // after the serve's cleanup: it holds a request open
		addr := r.serve(r.t, strings.Replace(cmd, "http://127.0.0.1:8080", host.URL, 1))
		r.waitFinished(addr, 1)
	}},
	{"curl ", func(r *readmeRun, cmd string) {
		dir := filepath.Join(r.tmp, "curl")
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "events.ndjson"), []byte(strings.Join(r.events(), "\n")+"\n"), 0o644)
		out, _ := r.shIn(dir, strings.ReplaceAll(cmd, "127.0.0.1:7878", r.serveOnce()))
		var reply struct{ Accepted, Rejected int }
		if err := json.Unmarshal(out, &reply); err != nil || reply.Accepted != len(r.events()) || reply.Rejected != 0 {
			r.t.Errorf("%s answered %s, want all %d events accepted", cmd, out, len(r.events()))
		}
	}},
	{"mlx-metrics serve --replay ", func(r *readmeRun, cmd string) {
		r.waitFinished(r.serve(r.t, cmd), 1)
	}},
	{"mlx-metrics events replay ", func(r *readmeRun, cmd string) {
		addr := r.serveOnce()
		out, errOut := r.sh(cmd, "MLX_METRICS_SERVER=http://"+addr)
		if !strings.Contains(string(out)+string(errOut), " 0 rejected") {
			r.t.Errorf("%s: %s%s", cmd, out, errOut)
		}
	}},
}

func TestReadmeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs the README's commands")
	}
	root := repoRoot(t)
	text, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	r := &readmeRun{t: t, top: t, root: root, tmp: t.TempDir()}
	ran := map[string]bool{}
	for _, f := range fences(string(text)) {
		switch f.info {
		case "html":
			continue // panel/e2e TestReadmeSnippets
		case "ndjson":
			for _, line := range f.lines {
				if _, err := events.Parse([]byte(line)); err != nil {
					t.Errorf("README.md:%d: an example event does not parse: %v", f.line, err)
				}
			}
			continue
		case "yaml":
			checkPromConfig(t, r.tmp, f)
			continue
		case "sh":
		default:
			t.Errorf("README.md:%d: a block of %q, which this test does not know how to check", f.line, f.info)
			continue
		}
		for _, line := range f.lines {
			cmd := strings.TrimSpace(trailingComment.ReplaceAllString(line, ""))
			if cmd == "" {
				continue
			}
			check := findCheck(cmd)
			if check == nil {
				t.Errorf("README.md:%d: %q has no check here: add one to readmeChecks", f.line, cmd)
				continue
			}
			ran[check.prefix] = true
			t.Run(cmd, func(t *testing.T) {
				r.t = t
				check.check(r, cmd)
			})
			r.t = t
		}
	}
	for _, c := range readmeChecks {
		if !ran[c.prefix] {
			t.Errorf("no README command starts with %q: drop its check", c.prefix)
		}
	}
}

func findCheck(cmd string) *readmeCheck {
	for i := range readmeChecks {
		if strings.HasPrefix(cmd, readmeChecks[i].prefix) {
			return &readmeChecks[i]
		}
	}
	return nil
}

// checkScripts checks that each script of cmd exists, is executable and
// parses (bash -n).
func checkScripts(r *readmeRun, cmd string) {
	for _, word := range strings.Fields(cmd) {
		if !strings.HasPrefix(word, "scripts/") {
			continue
		}
		path := filepath.Join(r.root, word)
		st, err := os.Stat(path)
		if err != nil || st.Mode()&0o111 == 0 {
			r.t.Errorf("%s: not an executable script (%v)", word, err)
			continue
		}
		if out, err := exec.Command("bash", "-n", path).CombinedOutput(); err != nil {
			r.t.Errorf("%s does not parse: %v\n%s", word, err, out)
		}
	}
}

// checkPromConfig has promtool check the README's scrape configuration.
func checkPromConfig(t *testing.T, tmp string, f fence) {
	t.Run("prometheus.yml", func(t *testing.T) {
		promtool := tooltest.Look(t, "promtool")
		path := filepath.Join(tmp, "prometheus.yml")
		os.WriteFile(path, []byte(strings.Join(f.lines, "\n")+"\n"), 0o644)
		if out, err := exec.Command(promtool, "check", "config", path).CombinedOutput(); err != nil {
			t.Errorf("README.md:%d: promtool check config: %v\n%s", f.line, err, out)
		}
	})
}

// events are the README's example events, one JSON line each.
func (r *readmeRun) events() []string {
	text, _ := os.ReadFile(filepath.Join(r.root, "README.md"))
	for _, f := range fences(string(text)) {
		if f.info == "ndjson" {
			return f.lines
		}
	}
	r.t.Fatal("the README has no ndjson block of example events")
	return nil
}

// env is the commands' environment: the README's binary first on PATH,
// and nothing of the user's backend settings.
func (r *readmeRun) env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MLX_METRICS_") || strings.HasPrefix(kv, "MLX_METRICS_REQUIRE_TOOLS=") {
			env = append(env, kv)
		}
	}
	if r.binary != "" {
		env = append(env, "PATH="+filepath.Dir(r.binary)+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	return append(env, extra...)
}

func (r *readmeRun) sh(cmd string, env ...string) (stdout, stderr []byte) {
	return r.shIn(r.root, cmd, env...)
}

// shIn runs cmd with bash in dir and returns its stdout and stderr apart;
// a failure fails the test.
func (r *readmeRun) shIn(dir, cmd string, env ...string) (stdout, stderr []byte) {
	r.t.Helper()
	c := exec.Command("bash", "-c", cmd)
	c.Dir, c.Env = dir, r.env(env...)
	var out, errOut strings.Builder
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Run(); err != nil {
		r.t.Fatalf("%s: %v\n%s%s", cmd, err, out.String(), errOut.String())
	}
	return []byte(out.String()), []byte(errOut.String())
}

// serve starts cmd (a serve command) on a free loopback port with a
// temporary home, stopped when owner ends, and returns its address.
func (r *readmeRun) serve(owner *testing.T, cmd string) string {
	r.t.Helper()
	if r.binary == "" {
		r.t.Fatal("no binary: the README's go build line must come before its serve commands")
	}
	home := owner.TempDir()
	c := exec.Command("bash", "-c", "exec "+cmd+" --addr 127.0.0.1:0 --home "+home)
	c.Dir, c.Env = r.root, r.env()
	stderr, err := c.StderrPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		r.t.Fatal(err)
	}
	owner.Cleanup(func() {
		c.Process.Signal(syscall.SIGINT)
		done := make(chan struct{})
		go func() { c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			c.Process.Kill()
			<-done
		}
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), "serving on http://"); ok {
				addr <- strings.Fields(rest)[0]
			}
		}
		close(addr)
		io.Copy(io.Discard, stderr)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			r.t.Fatalf("%s ended before serving", cmd)
		}
		return a
	case <-time.After(60 * time.Second):
		r.t.Fatalf("%s: not serving within a minute", cmd)
	}
	return ""
}

// serveOnce is a plain serve for the client commands, started once and
// stopped when the whole test ends.
func (r *readmeRun) serveOnce() string {
	if r.backend == "" {
		r.backend = r.serve(r.top, "mlx-metrics serve")
	}
	return r.backend
}

// waitFinished waits until the backend at addr has reduced n finished
// requests.
func (r *readmeRun) waitFinished(addr string, n int) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var snap struct {
			Requests struct{ Finished int }
		}
		if res, err := http.Get("http://" + addr + "/api/metrics/snapshot"); err == nil {
			json.NewDecoder(res.Body).Decode(&snap)
			res.Body.Close()
		}
		if snap.Requests.Finished >= n {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: %d finished requests, want %d", addr, snap.Requests.Finished, n)
		}
		time.Sleep(50 * time.Millisecond) // polls the backend's snapshot; not synchronisation
	}
}
