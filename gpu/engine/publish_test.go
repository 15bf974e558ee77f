package engine

import (
	"bufio"
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

func TestNewPublisherURL(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"http://127.0.0.1:7878", "http://127.0.0.1:7878/api/metrics/events", true},
		{"http://127.0.0.1:7878/", "http://127.0.0.1:7878/api/metrics/events", true},
		{"http://h/custom/events", "http://h/custom/events", true},
		{"ftp://h", "", false},
		{"127.0.0.1:7878", "", false},
	}
	for _, tt := range tests {
		p, err := NewPublisher(tt.in, PublisherOptions{})
		if (err == nil) != tt.ok || (tt.ok && p.URL() != tt.want) {
			t.Errorf("NewPublisher(%q) = %v, %v; want %q ok=%v", tt.in, p, err, tt.want, tt.ok)
		}
	}
}

// Events reach the backend as NDJSON with the token, each one valid.
func TestPublisherPosts(t *testing.T) {
	var mu sync.Mutex
	var got []events.Event
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		auth = r.Header.Get("Authorization")
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			ev, err := events.Parse(sc.Bytes())
			if err != nil {
				t.Errorf("posted %q: %v", sc.Text(), err)
			}
			got = append(got, ev)
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	p, err := NewPublisher(srv.URL, PublisherOptions{Token: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		p.Send(events.Event{Type: events.TypeSchedulerSample, At: int64(1_764_000_000_000 + i),
			Payload: &events.SchedulerSample{Model: "m", Active: i, Capacity: 4}})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Run flushes what is queued and returns
	p.Run(ctx)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 || auth != "Bearer secret" || p.Dropped() != 0 {
		t.Errorf("got %d events, auth %q, dropped %d", len(got), auth, p.Dropped())
	}
}

// A backend that is down costs events, counted, never the engine's time.
func TestPublisherDropsWhenDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	p, err := NewPublisher(url, PublisherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	p.log = slog.New(slog.NewTextHandler(&log, nil))
	for i := range publishBuffer + 10 { // 10 over the buffer: dropped at Send
		p.Send(events.Event{Type: events.TypeSchedulerSample, At: int64(1_764_000_000_000 + i),
			Payload: &events.SchedulerSample{Model: "m", Capacity: 1}})
	}
	if p.Dropped() != 10 {
		t.Fatalf("dropped %d at Send, want 10", p.Dropped())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p.Run(ctx)
	if logged := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n"); p.Dropped() != publishBuffer+10 || len(logged) != 1 || !strings.Contains(logged[0], "level=WARN") {
		t.Errorf("dropped %d (want %d), %d log lines (want 1: the first failure)", p.Dropped(), publishBuffer+10, len(logged))
	}
}
