package main

import (
	"context"
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/app"
	"github.com/mlx-bun/mlx-metrics/backend/internal/bus"
	"github.com/mlx-bun/mlx-metrics/backend/internal/health"
)

func TestLiveFlags(t *testing.T) {
	recorded := filepath.Join("..", "..", "internal", "store", "testdata", "recorded.ndjson")
	for _, tc := range []struct {
		name string
		args []string
		err  string // empty: starts
	}{
		{"defaults", nil, ""},
		{"replay", []string{"-replay", recorded, "-window", "50"}, ""},
		{"missing replay file", []string{"-replay", "/nonexistent/events.ndjson"}, "-replay"},
		{"zero window", []string{"-window", "0"}, "-window 0"},
		{"huge series", []string{"-series", "1000000"}, "-series 1000000"},
		{"negative replay speed", []string{"-replay-speed", "-1"}, "-replay-speed"},
		{"NaN replay speed", []string{"-replay-speed", "NaN"}, "-replay-speed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var cfg app.LiveConfig
			addLiveFlags(fs, &envDefaults{}, &cfg)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			h := health.New(time.Now(), health.Options{})
			s, err := app.StartLive(context.Background(), bus.New(), h, cfg)
			if tc.err != "" {
				if exitCode(startError(err)) != 2 || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want a usage error mentioning %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(context.Background())
			var served app.Handlers
			if s.Handlers(&served); served.Live == nil || served.Events == nil {
				t.Fatalf("handlers %+v, want the store's and POST /events'", served)
			}
			rep := h.Report()
			for _, k := range []string{"ingest", "stream"} {
				if _, ok := rep[k]; !ok {
					t.Errorf("healthz lacks %q", k)
				}
			}
		})
	}
}
