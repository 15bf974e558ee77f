package app

import (
	"bufio"
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mlx-bun/mlx-metrics/gpu/engine"
	"github.com/mlx-bun/mlx-metrics/shared/events"
)

func TestLoopbackURL(t *testing.T) {
	tests := []struct{ addr, want string }{
		{"127.0.0.1:7878", "http://127.0.0.1:7878"},
		{":7878", "http://127.0.0.1:7878"},
		{"0.0.0.0:7878", "http://127.0.0.1:7878"},
		{"[::]:7878", "http://127.0.0.1:7878"},
		{"[::1]:7878", "http://[::1]:7878"},
		{"localhost:1", "http://localhost:1"},
	}
	for _, tt := range tests {
		if got := loopbackURL(tt.addr); got != tt.want {
			t.Errorf("loopbackURL(%q) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}

// The reference engine publishes the engine's events, with the events token,
// to the backend: its load, then the synthetic traffic's requests.
func TestReferenceEnginePublishes(t *testing.T) {
	var mu sync.Mutex
	seen := map[events.Type]int{}
	finished := make(chan struct{})
	var once sync.Once
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			w.Write([]byte(`{}`))
		case "/api/metrics/events":
			if r.Header.Get("Authorization") != "Bearer tok" {
				http.Error(w, "no token", http.StatusUnauthorized)
				return
			}
			sc := bufio.NewScanner(r.Body)
			sc.Buffer(nil, events.MaxLineBytes)
			for sc.Scan() {
				ev, err := events.Parse(sc.Bytes())
				if err != nil {
					t.Errorf("event %s: %v", sc.Text(), err)
					continue
				}
				mu.Lock()
				seen[ev.Type]++
				if seen[events.TypeModelLoad] >= 2 && seen[events.TypeRequestFinished] > 0 {
					once.Do(func() { close(finished) })
				}
				mu.Unlock()
			}
			w.WriteHeader(http.StatusAccepted)
		default:
			http.NotFound(w, r)
		}
	}))
	defer backend.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fast := engine.DefaultConfig()
	fast.DecodeRate, fast.PrefillRate, fast.LoadTime = 5000, 1e6, 0
	eng, err := StartReferenceEngine(ctx, strings.TrimPrefix(backend.URL, "http://"), "tok", ReferenceEngineConfig{Enabled: true, Rate: 50, Engine: &fast})
	if err != nil {
		t.Fatal(err)
	}
	<-finished
	if err := eng.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen[events.TypeModelMemory] == 0 {
		t.Errorf("events seen %v, want model.memory too", seen)
	}
}

// Disabled, the reference engine starts nothing; a rate that is not a
// number from just above 0 to MaxReferenceTraffic is refused.
func TestReferenceEngineConfig(t *testing.T) {
	if eng, err := StartReferenceEngine(context.Background(), "127.0.0.1:1", "", ReferenceEngineConfig{}); err != nil {
		t.Fatal(err)
	} else if err := eng.Close(context.Background()); err != nil { // disabled: nothing started
		t.Fatal(err)
	}
	for _, rate := range []float64{0, -1, math.NaN(), math.Inf(1), math.Inf(-1), MaxReferenceTraffic + 1, 1e300} {
		var ce *ConfigError
		if _, err := StartReferenceEngine(context.Background(), "127.0.0.1:1", "", ReferenceEngineConfig{Enabled: true, Rate: rate}); !errors.As(err, &ce) {
			t.Errorf("traffic rate %v: %v, want a *ConfigError", rate, err)
		}
	}
	for _, rate := range []float64{0.01, 1, MaxReferenceTraffic} {
		if err := (ReferenceEngineConfig{Enabled: true, Rate: rate}).check(); err != nil {
			t.Errorf("traffic rate %v: %v, want it accepted", rate, err)
		}
	}
}
