package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/mlx-bun/mlx-metrics/shared/apierror"
	"github.com/mlx-bun/mlx-metrics/shared/routes"
)

// cliEnv is where the client subcommands write, so tests can capture it.
type cliEnv struct {
	stdout, stderr io.Writer
	// tty is true when stderr is a terminal: progress is then a bar
	// redrawn in place, else plain lines.
	tty bool
}

func osEnv() cliEnv {
	return cliEnv{stdout: os.Stdout, stderr: os.Stderr,
		tty: isatty.IsTerminal(os.Stderr.Fd()) || isatty.IsCygwinTerminal(os.Stderr.Fd())}
}

// defaultServer is the backend the client subcommands talk to.
func defaultServer() string { return envOr("MLX_METRICS_SERVER", "http://127.0.0.1:7878") }

// usageErr is a command-line mistake: exit code 2, like the go tool.
func usageErr(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

// parseFlags parses args allowing flags after positional arguments
// (`bench compare A B --threshold 0.1`), and returns the positionals.
// A bad flag is exit code 2; -h prints the usage and its flag.ErrHelp,
// wrapped the same way, is exit code 0 in main.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, &exitError{code: 2, err: err}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// apiClient calls a running backend's /api/metrics routes.
type apiClient struct {
	base string // scheme://host[:port], no trailing slash
	http *http.Client
}

func newAPIClient(server string) (*apiClient, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageErr("--server %q: want an http(s) URL such as http://127.0.0.1:7878", server)
	}
	return &apiClient{
		base: strings.TrimSuffix(u.Scheme+"://"+u.Host+u.Path, "/"),
		http: &http.Client{Timeout: 30 * time.Second},
	}, nil
}

// do sends a request with header to path under /api/metrics and decodes a
// 2xx JSON answer into out (when not nil). Anything else becomes an error
// carrying the API's message.
func (c *apiClient) do(ctx context.Context, method, path string, header http.Header, body io.Reader, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+routes.Prefix+path, body)
	if err != nil {
		return err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("is the backend running? %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		e := &statusError{method: method, path: path, status: resp.StatusCode, message: resp.Status}
		var body apierror.Body
		if json.Unmarshal(b, &body) == nil && body.Error.Message != "" {
			e.message = body.Error.Message
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: unreadable answer: %w", method, path, err)
	}
	return nil
}

// statusError is a non-2xx answer, with the API's message when it sent one.
type statusError struct {
	method, path string
	status       int
	message      string
}

func (e *statusError) Error() string {
	if e.message == http.StatusText(e.status) || strings.HasSuffix(e.message, http.StatusText(e.status)) {
		return fmt.Sprintf("%s %s: %s", e.method, e.path, e.message)
	}
	return fmt.Sprintf("%s %s: %s (%d)", e.method, e.path, e.message, e.status)
}

func (c *apiClient) get(ctx context.Context, path string, out any) error {
	return c.do(ctx, http.MethodGet, path, nil, nil, out)
}
