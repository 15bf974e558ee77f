package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// attempt is how the host answers one connection: the transport's error,
// or else status (a 2xx streams nothing and ends).
type attempt struct {
	err    error
	status int
}

var (
	unreachable = attempt{err: errors.New("dial tcp 127.0.0.1:9: connect: connection refused")}
	busy        = attempt{status: http.StatusServiceUnavailable}
	ends        = attempt{status: http.StatusOK} // reached; the stream ends at once
)

// scriptedHost answers the follower's GETs in the order of script.
func scriptedHost(script []attempt) *http.Client {
	var mu sync.Mutex
	n := 0
	return &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		a := script[min(n, len(script)-1)]
		n++
		mu.Unlock()
		if a.err != nil {
			return nil, a.err
		}
		return &http.Response{StatusCode: a.status, Status: fmt.Sprintf("%d %s", a.status, http.StatusText(a.status)),
			Request: r, Body: io.NopCloser(strings.NewReader("")), Header: http.Header{"Content-Type": {"application/x-ndjson"}}}, nil
	})}
}

// A host that cannot be reached is said so: the state is unreached after
// the first failed attempt (Degraded says why, OnChange tells), the first
// failure is logged at once and the others counted, a line a minute;
// reaching the host again writes the count, says so and clears the state.
// A stream that ends after connecting is no failure.
func TestFollowerReach(t *testing.T) {
	const every = 10 * time.Second // the fixed backoff: six attempts a minute
	first := "follow http://u:xxxxx@host:9/events?k=v: cannot reach the host: "
	type after struct {
		state    string
		failed   uint64
		lines    []string // written since the step before, each holds its string
		degraded string   // a part of Degraded, "" when it must be ""
	}
	tests := []struct {
		name  string
		steps []attempt
		want  []after
	}{
		{"unreachable from the start: the first at once, then a count a minute",
			[]attempt{unreachable, unreachable, unreachable, unreachable, unreachable, unreachable, unreachable, unreachable},
			[]after{
				{snapshot.SourceUnreached, 1, []string{first + "dial tcp 127.0.0.1:9: connect: connection refused (further failed attempts are counted, logged at most every 1 min 00 s)"},
					"cannot reach the followed host host:9 (dial tcp 127.0.0.1:9: connect: connection refused) for 0.0 ms, 1 failed attempt"},
				{snapshot.SourceUnreached, 2, nil, "for 10.0 s, 2 failed attempts"},
				{snapshot.SourceUnreached, 3, nil, ""},
				{snapshot.SourceUnreached, 4, nil, ""},
				{snapshot.SourceUnreached, 5, nil, ""},
				{snapshot.SourceUnreached, 6, nil, ""},
				{snapshot.SourceUnreached, 7, []string{": 5 more failed attempts in the last 1 min 00 s; latest: dial tcp"}, "for 1 min 00 s, 7 failed attempts"},
				{snapshot.SourceUnreached, 8, nil, ""},
			}},
		{"unreachable by the host, then reached: the count, then one line",
			[]attempt{busy, busy, ends},
			[]after{
				{snapshot.SourceUnreached, 1, []string{first + "answered 503 Service Unavailable (further"}, "(answered 503 Service Unavailable)"},
				{snapshot.SourceUnreached, 2, nil, ""},
				{snapshot.SourceConnecting, 0, []string{": 1 more failed attempt in the last 20.0 s; latest: answered 503", ": reached the host after 2 failed attempts"}, ""},
			}},
		{"a stream that ends is no failure; a failure after it is news again",
			[]attempt{ends, ends, unreachable, ends, unreachable},
			[]after{
				{snapshot.SourceConnecting, 0, nil, ""},
				{snapshot.SourceConnecting, 0, nil, ""},
				{snapshot.SourceUnreached, 1, []string{first + "dial tcp"}, "for 0.0 ms"},
				{snapshot.SourceConnecting, 0, []string{": reached the host after 1 failed attempt"}, ""},
				{snapshot.SourceUnreached, 1, []string{first + "dial tcp"}, ""},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewFake(time.UnixMilli(t0))
			var (
				mu      sync.Mutex
				lines   []string
				changes []string // the states OnChange read
			)
			logger := logging.Func(func(_ slog.Level, msg string) {
				mu.Lock()
				lines = append(lines, msg)
				mu.Unlock()
			})
			var f *Follower
			f = NewFollower(bus.New(), "http://u:secret@host:9/events?k=v", FollowerOptions{
				Options: Options{Clock: clk, Logger: logger}, Client: scriptedHost(tt.steps),
				MinBackoff: every, MaxBackoff: every,
				OnChange: func() { mu.Lock(); changes = append(changes, f.Reach().State); mu.Unlock() },
			})
			if src := f.Reach(); src.State != snapshot.SourceConnecting || src.Since != t0 || src.Host != "host:9" {
				t.Fatalf("before the first attempt: %+v", src)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { f.Run(ctx); close(done) }()
			defer func() { cancel(); <-done }()
			wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer wcancel()
			for i, want := range tt.want {
				if i > 0 {
					clk.Advance(every)
				}
				if err := clk.WaitForSleepers(wctx, 1); err != nil {
					t.Fatalf("attempt %d never ended", i+1)
				}
				src := f.Reach()
				mu.Lock()
				got := lines
				lines = nil
				mu.Unlock()
				if src.State != want.state || src.FailedAttempts != want.failed || src.Host != "host:9" || strings.Contains(src.Error, "secret") {
					t.Errorf("attempt %d: %+v, want %s after %d failed", i+1, src, want.state, want.failed)
				}
				if st := f.Status(); st.State != src.State || st.FailedAttempts != src.FailedAttempts {
					t.Errorf("attempt %d: /healthz reads %+v", i+1, st)
				}
				// /healthz is open to anyone: the URL without its password
				// or its query (a token may be there), in the URL and in
				// the error alike.
				if b, _ := json.Marshal(f.Status()); !strings.Contains(string(b), `"url":"http://u:xxxxx@host:9/events?…"`) ||
					strings.Contains(string(b), "secret") || strings.Contains(string(b), "k=v") {
					t.Errorf("attempt %d: /healthz shows %s", i+1, b)
				}
				if len(got) != len(want.lines) {
					t.Fatalf("attempt %d: lines %q, want %q", i+1, got, want.lines)
				}
				for j, w := range want.lines {
					if !strings.Contains(got[j], w) || strings.Contains(got[j], "secret") {
						t.Errorf("attempt %d: line %q, want it to hold %q", i+1, got[j], w)
					}
				}
				d := f.Degraded()
				if (d == "") != (want.state != snapshot.SourceUnreached) || !strings.Contains(d, want.degraded) {
					t.Errorf("attempt %d: Degraded() = %q, want it to hold %q", i+1, d, want.degraded)
				}
			}
			if changes[len(changes)-1] != tt.want[len(tt.want)-1].state {
				t.Errorf("OnChange read %q last", changes)
			}
		})
	}
}
