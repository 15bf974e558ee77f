package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/backend/internal/health"
	"github.com/mlx-bun/mlx-metrics/backend/internal/ingest"
	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/snapshot"
)

// transport answers every request with what its func makes.
type transport func(*http.Request) (*http.Response, error)

func (f transport) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A followed host that cannot be reached makes /healthz degraded, naming
// the host and not the URL's credentials, and the snapshot says so; one
// reached (whose stream ended) and no followed host at all keep it ok.
func TestFollowedHostHealth(t *testing.T) {
	refused := transport(func(*http.Request) (*http.Response, error) {
		return nil, errors.New("dial tcp 127.0.0.1:9: connect: connection refused")
	})
	ends := transport(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Status: "200 OK", Request: r, Body: io.NopCloser(strings.NewReader(""))}, nil
	})
	for _, tc := range []struct {
		name   string
		url    string
		host   http.RoundTripper
		status string
		reason string // a part of ingest.reason
		state  string // the snapshot's source state; "" for none
	}{
		{"not reached", "http://u:secret@127.0.0.1:9/events", refused, health.StatusDegraded,
			"cannot reach the followed host 127.0.0.1:9 (dial tcp 127.0.0.1:9: connect: connection refused)", snapshot.SourceUnreached},
		{"reached, its stream ended", "http://127.0.0.1:9/events", ends, "ok", "", snapshot.SourceConnecting},
		{"none followed", "", nil, "ok", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(time.UnixMilli(1_764_690_000_000))
			h := health.New(clk.Now(), health.Options{Clock: clk})
			cfg := LiveConfig{EventsURL: tc.url, Window: 10, Recent: 10, Series: 10,
				follow: ingest.FollowerOptions{Options: ingest.Options{Clock: clk, Logger: logging.Func(func(level slog.Level, msg string) { t.Log(level, msg) })}, Client: &http.Client{Transport: tc.host}}}
			s, err := StartLive(context.Background(), bus.New(), h, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(context.Background())
			if tc.url != "" {
				// The first attempt is over when the follower waits to retry.
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := clk.WaitForSleepers(ctx, 1); err != nil {
					t.Fatal("the first attempt never ended")
				}
			}
			rep := h.Report()
			ingestSection, _ := rep["ingest"].(map[string]any)
			reason, _ := ingestSection["reason"].(string)
			if rep["status"] != tc.status || !strings.Contains(reason, tc.reason) || (tc.reason == "") != (reason == "") || strings.Contains(reason, "secret") {
				t.Errorf("status %v, ingest.reason %q; want %s, %q", rep["status"], reason, tc.status, tc.reason)
			}
			snap := s.Snapshot(clk.Now())
			if tc.state == "" && len(snap.Sources) != 0 || tc.state != "" && (len(snap.Sources) != 1 || snap.Sources[0].State != tc.state || snap.Sources[0].Host != "127.0.0.1:9") {
				t.Errorf("sources %+v, want one %q", snap.Sources, tc.state)
			}
		})
	}
}
