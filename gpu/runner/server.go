package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/duration"
)

// server is one started server under test, in its own process group so
// that stopping it stops whatever it started.
type server struct {
	cmd *exec.Cmd // nil when attached
	// attached: someone else started it (see attach.go).
	attached bool
	baseURL  string
	// readyURLs answer 2xx once it is ready: one for a started server;
	// for an attached one, each is tried in turn.
	readyURLs []string
	grace     time.Duration // how long an attached server may refuse connections
	goneErr   error         // set when an attached server stopped listening
	started   time.Time
	exited    chan struct{} // closed when the process has exited; nil when attached
	waitErr   error
	stderr    *tail
	logs      []*os.File
	stopOnce  sync.Once
}

// resolve fills the placeholders of a server's command and URLs.
func resolve(s bench.Server, self string, port int) (argv []string, env []string, base, ready string) {
	p := strconv.Itoa(port)
	sub := func(v string) string { return strings.ReplaceAll(v, bench.PortPlaceholder, p) }
	for i, a := range s.Argv {
		if i == 0 && a == bench.SelfPlaceholder {
			a = self
		}
		argv = append(argv, sub(a))
	}
	for k, v := range s.Env {
		env = append(env, k+"="+sub(v))
	}
	return argv, env, strings.TrimRight(sub(s.BaseURL), "/"), sub(s.ReadyURL)
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startServer spawns the cell's server, its output going to logDir.
func startServer(cell bench.Cell, self, logDir, logName string) (*server, error) {
	port := cell.Server.Port
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			return nil, fmt.Errorf("choosing a port: %w", err)
		}
	}
	argv, env, base, ready := resolve(cell.Server, self, port)
	stdout, err := os.Create(filepath.Join(logDir, logName+".stdout.log"))
	if err != nil {
		return nil, pathless("create", "logs/"+logName+".stdout.log", err)
	}
	stderrFile, err := os.Create(filepath.Join(logDir, logName+".stderr.log"))
	if err != nil {
		stdout.Close()
		return nil, pathless("create", "logs/"+logName+".stderr.log", err)
	}
	s := &server{baseURL: base, readyURLs: []string{ready}, exited: make(chan struct{}), stderr: newTail(8 << 10), logs: []*os.File{stdout, stderrFile}}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = stdout
	cmd.Stderr = &teeWriter{w: stderrFile, t: s.stderr}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithRunner(cmd.SysProcAttr)
	// A worker that outlives the leader must not hold Wait on our pipe.
	cmd.WaitDelay = 5 * time.Second
	s.cmd = cmd
	s.started = time.Now()
	if err := cmd.Start(); err != nil {
		s.closeLogs()
		return nil, fmt.Errorf("starting %q: %w", argv[0], err)
	}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	return s, nil
}

func (s *server) pgid() int { return s.cmd.Process.Pid }

func (s *server) closeLogs() {
	for _, f := range s.logs {
		f.Close()
	}
}

// exitErr says how the server ended, once it has. An attached server has
// ended, as far as the run can tell, when it stopped listening.
func (s *server) exitErr() error {
	if s.attached {
		return s.goneErr
	}
	select {
	case <-s.exited:
		if s.waitErr != nil {
			return fmt.Errorf("the server exited: %v", s.waitErr)
		}
		return errors.New("the server exited")
	default:
		return nil
	}
}

// waitReady polls the readiness URL until it answers 2xx, the server
// exits, timeout passes or ctx ends. It returns the cold start: spawn to
// ready.
func (s *server) waitReady(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	if s.attached {
		return 0, s.waitAttached(ctx, timeout)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.readyURLs[0], nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return time.Since(s.started), nil
			}
			last = fmt.Errorf("%s answered %s", s.readyURLs[0], resp.Status)
		} else {
			last = err
		}
		select {
		case <-poll.C:
		case <-s.exited:
			return 0, fmt.Errorf("%v before it was ready", s.exitErr())
		case <-deadline.C:
			return 0, fmt.Errorf("not ready after %s (last: %v)", duration.Of(timeout), last)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// stop ends the process group: SIGTERM, then SIGKILL after grace. Only
// the first call acts: the group's id is not the server's once it is gone.
// An attached server is not the run's to stop.
func (s *server) stop(grace time.Duration) {
	if s.attached {
		return
	}
	s.stopOnce.Do(func() { s.terminate(grace) })
}

func (s *server) terminate(grace time.Duration) {
	defer s.closeLogs()
	select {
	case <-s.exited:
		// The leader is gone; its group may not be.
		_ = syscall.Kill(-s.pgid(), syscall.SIGKILL)
		return
	default:
	}
	_ = syscall.Kill(-s.pgid(), syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-s.exited:
	case <-t.C:
	}
	_ = syscall.Kill(-s.pgid(), syscall.SIGKILL)
	<-s.exited
}

// tail keeps the last bytes written to it: a failed phase's stderr.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

type teeWriter struct {
	w *os.File
	t *tail
}

func (w *teeWriter) Write(p []byte) (int, error) {
	w.t.Write(p)
	return w.w.Write(p)
}
