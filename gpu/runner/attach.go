package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/duration"
)

// An attached server is one the run measures but did not start: someone
// else owns its process, so the runner never signals it, samples its
// memory or times its cold start.

const (
	// defaultAttachGrace is how long "connection refused" is retried: a
	// server restarting binds within it, a wrong port fails in seconds.
	defaultAttachGrace = 5 * time.Second
	// attachReadyTimeout bounds the wait for a server that answers but
	// not yet 2xx (503 while it loads a model).
	attachReadyTimeout = time.Minute
	attachPoll         = 200 * time.Millisecond
)

// attachServer is the server of an attached cell: nothing runs, nothing
// exits (exited stays nil, so it never fires), nothing is stopped.
func attachServer(s bench.Server, grace time.Duration) *server {
	return &server{
		attached:  true,
		baseURL:   strings.TrimRight(s.BaseURL, "/"),
		readyURLs: attachReadyURLs(s),
		grace:     grace,
		started:   time.Now(),
		stderr:    newTail(0),
	}
}

// attachReadyURLs is where an attached server's readiness is checked: the
// plan's readyUrl, else {base}/models (every OpenAI-compatible server) and
// then /health at the base URL's host (mlx_lm.server, the reference engine).
func attachReadyURLs(s bench.Server) []string {
	if s.ReadyURL != "" {
		return []string{s.ReadyURL}
	}
	base := strings.TrimRight(s.BaseURL, "/")
	urls := []string{base + "/models"}
	if u, err := url.Parse(base); err == nil {
		urls = append(urls, u.Scheme+"://"+u.Host+"/health")
	}
	return urls
}

// waitAttached checks the readiness URLs until one answers 2xx. It fails
// at once when every URL answers a definite client error (a 404 will not
// become a 200 by waiting), after the grace when nothing listens, and
// after timeout otherwise, each time naming the URLs it tried.
func (s *server) waitAttached(ctx context.Context, timeout time.Duration) error {
	client := &http.Client{Timeout: 5 * time.Second}
	start := time.Now()
	for {
		var definite, refused int
		var tried []string
		for _, u := range s.readyURLs {
			status, err := getStatus(ctx, client, u)
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case err == nil && status/100 == 2:
				return nil
			case err == nil:
				if definiteStatus(status) {
					definite++
				}
				tried = append(tried, fmt.Sprintf("%s answered %d %s", u, status, http.StatusText(status)))
			case errors.Is(err, syscall.ECONNREFUSED):
				refused++
				tried = append(tried, fmt.Sprintf("nothing listens at %s (connection refused)", u))
			default:
				var ue *url.Error
				if errors.As(err, &ue) {
					err = ue.Err // it repeats the URL
				}
				tried = append(tried, fmt.Sprintf("%s: %v", u, err))
			}
		}
		what := strings.Join(tried, "; ")
		elapsed := time.Since(start)
		switch {
		case definite == len(s.readyURLs):
			return fmt.Errorf("the attached server is not ready: %s (is the base URL the server's OpenAI API root, e.g. http://host:port/v1?)", what)
		case refused > 0 && definite+refused == len(s.readyURLs) && elapsed >= s.grace:
			s.goneErr = fmt.Errorf("the attached server is not running: %s, for %s", what, duration.Of(s.grace))
			return s.goneErr
		case elapsed >= timeout:
			return fmt.Errorf("the attached server is not ready after %s: %s", duration.Of(timeout), what)
		}
		t := time.NewTimer(attachPoll)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// getStatus GETs u and returns its status.
func getStatus(ctx context.Context, client *http.Client, u string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// definiteStatus is a client error that waiting will not change (404 no
// such route, 401 no key, 405 ...); 408, 425 and 429 ask to come back.
func definiteStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests:
		return false
	}
	return code/100 == 4
}
